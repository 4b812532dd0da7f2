"""The tool host: one registry of built-in and MCP tools, budgeted by latency tier.

``from tools.host import ToolHost, ToolCall, ToolResult, ToolInfo`` is the public surface the
NPC engines use; see ``tools/host/host.py``.
"""

from __future__ import annotations

from tools.host.approval import ApprovalDecision, ApprovalGate, ApprovalRequest, Approver
from tools.host.connections import RestartPolicy, ServerState
from tools.host.content import Attachment
from tools.host.host import ToolHost
from tools.host.registry import NameCollision, safe_name
from tools.host.types import Invocation, ToolCall, ToolInfo, ToolResult, TurnToolReport

__all__ = [
    "ApprovalDecision",
    "ApprovalGate",
    "ApprovalRequest",
    "Approver",
    "Attachment",
    "Invocation",
    "NameCollision",
    "RestartPolicy",
    "ServerState",
    "ToolCall",
    "ToolHost",
    "ToolInfo",
    "ToolResult",
    "TurnToolReport",
    "safe_name",
]
