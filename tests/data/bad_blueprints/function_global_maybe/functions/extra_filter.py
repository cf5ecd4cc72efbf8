"""
title: Extra
author: someone
global: maybe
"""


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
