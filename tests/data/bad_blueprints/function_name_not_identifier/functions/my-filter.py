"""
title: Mine
"""


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
