"""
title: PII redaction
description: Masks e-mail addresses.
global: false
"""


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
