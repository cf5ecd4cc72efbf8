"""
title: Broken
"""

class Filter:
    def inlet(self, body: dict) -> dict
        return body
