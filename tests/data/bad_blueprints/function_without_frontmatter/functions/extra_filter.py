# a filter with no frontmatter docstring


class Filter:
    def inlet(self, body: dict) -> dict:
        return body
