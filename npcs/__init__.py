"""npcs package."""
