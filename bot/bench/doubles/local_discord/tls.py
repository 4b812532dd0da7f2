"""A throwaway self-signed certificate: discord.py connects to voice servers over ``wss://``."""

from __future__ import annotations

import datetime
import ipaddress
import os
import ssl
import tempfile
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

__all__ = ["self_signed_tls"]


def self_signed_tls(folder: str | Path | None = None) -> ssl.SSLContext:
    """A server context for 127.0.0.1. In-process clients do not verify it (``ssl=False``);
    with ``folder`` the certificate stays there as ``voice.crt`` for a bot process that does
    (its ``SSL_CERT_FILE``): it names 127.0.0.1 as a subject alternative name, and its own
    organisation, so a trust store holding several of these finds each one's key."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, f"voice {os.urandom(6).hex()}"),
        ]
    )
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(1)
        .not_valid_before(now - datetime.timedelta(minutes=1))
        .not_valid_after(now + datetime.timedelta(days=2))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.IPv4Address("127.0.0.1"))]),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    with tempfile.TemporaryDirectory(prefix="glyphoxa-tls-") as scratch:
        cert_path = Path(folder or scratch, "voice.crt")
        key_path = Path(scratch, "voice.key")  # the key never outlives the context
        cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
        key_path.write_bytes(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
        context.load_cert_chain(cert_path, key_path)
    return context
