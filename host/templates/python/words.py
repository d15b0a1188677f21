"""What the tool computes, in plain Python (tested by test_words.py without a component)."""


def count_words(text: str) -> int:
    """The number of words of `text`: runs of characters between spaces."""
    return len(text.split())
