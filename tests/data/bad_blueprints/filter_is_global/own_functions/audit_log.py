"""
title: Audit log
description: Logs every request.
global: true
"""


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
