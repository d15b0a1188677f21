"""Unit tests of words.py:   python3 -m unittest test_words"""

import unittest

from words import count_words


class CountWords(unittest.TestCase):
    def test_counts_words(self):
        self.assertEqual(count_words("one two  three\nfour"), 4)

    def test_blank_text_has_none(self):
        self.assertEqual(count_words("   "), 0)


if __name__ == "__main__":
    unittest.main()
