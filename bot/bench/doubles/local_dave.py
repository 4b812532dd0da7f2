"""The voice server's part of DAVE, played locally: an MLS *external sender* and its group.

On Discord the voice server signs Add and Remove proposals (ECDSA P-256, basic credential) and
relays commits and welcomes; members are davey sessions. :class:`LocalDaveGroup` does the same
without Discord so real ``davey.DaveSession`` objects form a group, change epoch when someone
joins or leaves, and let a member that lost its state (a reinitialised bot) back in. Members are
either in-process sessions (remote players) or reached over the voice gateway (the bot, through
discord.py): for those the caller sends the proposals (op 27), commit (op 29) and welcome (op 30)
this class returns.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence

import davey
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

__all__ = ["LocalDaveGroup", "mls_vector"]

_MLS10 = 1
_PUBLIC_MESSAGE = 1
_SENDER_EXTERNAL = 2
_CONTENT_PROPOSAL = 2
_PROPOSAL_ADD = 1
_PROPOSAL_REMOVE = 3
_BASIC_CREDENTIAL = 1


def _varint(value: int) -> bytes:
    """MLS variable-length vector prefix (RFC 9420 section 2.1.2)."""
    if value < 0x40:
        return bytes([value])
    if value < 0x4000:
        return struct.pack(">H", 0x4000 | value)
    return struct.pack(">I", 0x80000000 | value)


def mls_vector(data: bytes) -> bytes:
    return _varint(len(data)) + data


class LocalDaveGroup:
    """A DAVE group on one channel whose members are real davey sessions.

    The first in-process member founds the group; later changes are committed by an in-process
    member (the voice server picks one commit), which every in-process member then processes,
    so the epoch advances as on Discord. ``leaves`` tracks which user holds which MLS leaf
    (removals blank a leaf, additions fill the leftmost blank one: RFC 9420 section 12.3).
    """

    def __init__(self, channel_id: int) -> None:
        self.channel_id = channel_id
        self._key = ec.generate_private_key(ec.SECP256R1())
        public = self._key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        credential = struct.pack(">H", _BASIC_CREDENTIAL) + mls_vector(b"\0" * 8)
        #: opcode 25 payload (DAVE_MLS_EXTERNAL_SENDER_PACKAGE)
        self.external_sender = mls_vector(public) + credential
        self.members: dict[int, davey.DaveSession] = {}
        """In-process members by user id."""
        self.leaves: list[int | None] = []

    @property
    def epoch(self) -> int:
        committer = self._committer()
        return (committer.epoch or 0) if committer is not None else 0

    def new_session(self, user_id: int) -> davey.DaveSession:
        session = davey.DaveSession(davey.DAVE_PROTOCOL_VERSION, user_id, self.channel_id)
        session.set_external_sender(self.external_sender)
        return session

    def leaf(self, user_id: int) -> int | None:
        return self.leaves.index(user_id) if user_id in self.leaves else None

    def add_proposals(self, key_packages: Iterable[bytes], epoch: int) -> bytes:
        """opcode 27 payload after its operation byte: signed external Add proposals."""
        messages = b"".join(self._proposal(_add_body(kp), epoch) for kp in key_packages)
        return mls_vector(messages)

    def proposals(
        self, *, add: Sequence[tuple[int, bytes]] = (), remove: Sequence[int] = ()
    ) -> bytes:
        """opcode 27 payload after its operation byte: remove ``remove`` (user ids), then add
        ``add`` (user id, key package) at the group's current epoch."""
        epoch = self.epoch
        messages = b""
        for user_id in remove:
            leaf = self.leaf(user_id)
            if leaf is None:
                raise ValueError(f"user {user_id} is not in the group")
            messages += self._proposal(struct.pack(">HI", _PROPOSAL_REMOVE, leaf), epoch)
        for _, key_package in add:
            messages += self._proposal(_add_body(key_package), epoch)
        return mls_vector(messages)

    def commit(
        self,
        proposals: bytes,
        *,
        add: Sequence[int] = (),
        remove: Sequence[int] = (),
        skip: Iterable[int] = (),
    ) -> davey.CommitWelcome:
        """Have an in-process member commit ``proposals`` (made for ``add``/``remove``); every
        in-process member but ``skip`` (e.g. one left on a stale epoch) processes it."""
        skipped = set(skip)
        committer = self._committer(exclude={*skipped, *remove})
        if committer is None:
            raise RuntimeError("no in-process member can commit")
        # The voice server broadcasts the proposals (op 27); each member stores them and may
        # offer a commit; the server picks one (here the committer's) and announces it (op 29).
        processing = [
            member
            for user_id, member in self.members.items()
            if user_id not in skipped and user_id not in remove
        ]
        result = None
        for member in processing:
            offered = member.process_proposals(davey.ProposalsOperationType.append, proposals)
            if member is committer:
                result = offered
        if result is None:
            raise RuntimeError("the committer produced no commit for the proposals")
        for user_id in remove:
            self.members.pop(user_id, None)
            self.leaves[self.leaves.index(user_id)] = None
        for member in processing:
            member.process_commit(result.commit)
        for user_id in add:
            self._place(user_id)
        return result

    def join(self, sessions: Sequence[davey.DaveSession]) -> None:
        """Add in-process ``sessions`` (fresh, external sender set) in one commit."""
        pending = list(sessions)
        if not self._committer():
            founder = pending.pop(0)
            founder.get_serialized_key_package()  # creates the pending group
            self.members[founder.user_id] = founder
            self._place(founder.user_id)
            if not pending:
                return
        adds = [(s.user_id, s.get_serialized_key_package()) for s in pending]
        users = [user for user, _ in adds]
        result = self.commit(self.proposals(add=adds), add=users)
        if result.welcome is None:
            raise RuntimeError("commit without a welcome for new members")
        for session in pending:
            session.process_welcome(result.welcome)
            self.members[session.user_id] = session

    def remove(self, user_ids: Sequence[int], *, skip: Iterable[int] = ()) -> bytes:
        """Remove members in one commit; returns the commit (op 29 for remote members)."""
        proposals = self.proposals(remove=user_ids)
        return self.commit(proposals, remove=user_ids, skip=skip).commit

    def _committer(self, exclude: set[int] | None = None) -> davey.DaveSession | None:
        out = (m for user, m in self.members.items() if not exclude or user not in exclude)
        return next(out, None)

    def _place(self, user_id: int) -> None:
        if None in self.leaves:
            self.leaves[self.leaves.index(None)] = user_id
        else:
            self.leaves.append(user_id)

    def _proposal(self, body: bytes, epoch: int) -> bytes:
        content = (
            mls_vector(struct.pack(">Q", self.channel_id))
            + struct.pack(">QBI", epoch, _SENDER_EXTERNAL, 0)
            + mls_vector(b"")
            + struct.pack(">B", _CONTENT_PROPOSAL)
            + body
        )
        wire = struct.pack(">HH", _MLS10, _PUBLIC_MESSAGE)
        to_sign = mls_vector(b"MLS 1.0 FramedContentTBS") + mls_vector(wire + content)
        signature = self._key.sign(to_sign, ec.ECDSA(hashes.SHA256()))
        return wire + content + mls_vector(signature)


def _add_body(key_package: bytes) -> bytes:
    return struct.pack(">H", _PROPOSAL_ADD) + key_package
