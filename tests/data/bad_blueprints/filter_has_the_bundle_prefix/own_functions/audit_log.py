"""
title: Audit log
description: Logs every request.
global: false
"""


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
