"""campaigns package."""
