"""The ``dice`` server: ``roll(expression)`` and ``roll_table(table_name)``."""

from __future__ import annotations

import logging
from typing import Any

from tools.builtin._common import define_tool, fast, object_schema
from tools.builtin.dice_engine import MAX_EXPRESSION_LENGTH, roll_expression
from tools.builtin.tables import roll_on_table
from tools.spec import BuiltinServer, ToolContext

__all__ = ["create_server"]

log = logging.getLogger(__name__)


def create_server(ctx: ToolContext) -> BuiltinServer:
    """Dice rolls and random tables; both are local and land in FAST."""

    async def roll(expression: str) -> dict[str, Any]:
        return roll_expression(expression).as_dict()

    async def roll_table(table_name: str) -> dict[str, Any]:
        return roll_on_table(table_name, ctx.campaign_dir)

    return BuiltinServer(
        name="dice",
        tools=[
            define_tool(
                "roll",
                "Roll dice. Examples: 1d20+5, 2d6+1d4+3, 4d6kh3 (keep highest 3), 2d20kl1 "
                "(disadvantage), d6! (exploding), d%. Returns each die, the kept dice, the "
                "total and a readable breakdown.",
                object_schema(
                    {
                        "expression": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": MAX_EXPRESSION_LENGTH,
                            "description": "Dice expression such as 2d6+3 or 4d6kh3",
                        }
                    },
                    ["expression"],
                ),
                roll,
                fast(estimated=5, maximum=300, read_only=True, idempotent=False),
            ),
            define_tool(
                "roll_table",
                "Roll on a random table: the campaign's own tables or the built-in wild_magic, "
                "treasure_hoard and random_encounter. An unknown name lists the tables.",
                object_schema(
                    {
                        "table_name": {
                            "type": "string",
                            "minLength": 1,
                            "maxLength": 80,
                            "description": "Table name, e.g. wild_magic",
                        }
                    },
                    ["table_name"],
                ),
                roll_table,
                fast(estimated=10, maximum=300, read_only=True, idempotent=False),
            ),
        ],
    )
