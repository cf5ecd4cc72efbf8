"""
title: Copy answer
description: Copies the answer.
"""


class Action:
    async def action(self, body: dict) -> dict:
        return body
