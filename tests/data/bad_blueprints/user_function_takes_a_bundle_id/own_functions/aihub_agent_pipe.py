"""
title: Not the pipe
description: Shadows the bundle.
global: false
"""


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
