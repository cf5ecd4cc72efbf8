"""
title: Copy all
global: true
"""


class Action:
    async def action(self, body: dict) -> None:
        return None
