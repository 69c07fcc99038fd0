"""Hand-made hostile completions for the reward path, used by tests/rewards/test_hostile_text.py.

Each entry is a completion a policy could (in principle) emit; the comment says what it attacks.
Big entries are built by expressions so the file stays small; ``CORPUS`` is built once at import
(about 60 MB of strings in total).
"""

from __future__ import annotations

MB = 1_000_000
TAIL = "\n</answer>"

CORPUS: list[str] = [
    "",  # 0 empty completion
    "\x00" * 1000,  # 1 NUL bytes only
    "<answer>\n\x00\x00\x00\n</answer>",  # 2 NUL bytes inside the answer block
    "<answer>\n1\x008\n</answer>",  # 3 NUL byte splitting a number
    "\ud800",  # 4 lone high surrogate (invalid UTF-16, not encodable as UTF-8)
    "<answer>\n\udcff18\ud800\n</answer>",  # 5 lone surrogates around a correct-looking number
    "9**9**9",  # 6 Python power tower (387 million digits if evaluated), no tags
    "<answer>\n9**9**9\n</answer>",  # 7 power tower in the answer block
    "<answer>\n$10^{10^{10}}$\n</answer>",  # 8 LaTeX power tower (10^10 digits)
    "<answer>\n$9^{9^{9^{9}}}$\n</answer>",  # 9 four-level tower
    "<answer>\n$(10^{100})!$\n</answer>",  # 10 factorial of a googol
    "<answer>\n$\\binom{10^{100}}{10^{50}}$\n</answer>",  # 11 huge binomial coefficient
    "<answer>\n$2^{2^{2^{2^{2^{2}}}}}$\n</answer>",  # 12 tower of 2s (2^65536 at level 5, then 2^(2^65536))
    "<answer>\n\\boxed{" + "{" * 10_000 + "18" + "}" * 10_000 + "}\n</answer>",  # 13 braces nested 10,000 deep
    "<answer>\n$" + "\\frac{1}{" * 10_000 + "2" + "}" * 10_000 + "$\n</answer>",  # 14 \frac nested 10,000 deep
    "<answer>\n$" + "\\sqrt{" * 10_000 + "2" + "}" * 10_000 + "$\n</answer>",  # 15 \sqrt nested 10,000 deep
    "<answer>\n" + "(" * 10_000 + "18" + TAIL,  # 16 10,000 unbalanced opening parentheses
    "<answer>\n18" + "}" * 10_000 + TAIL,  # 17 10,000 unbalanced closing braces
    "<answer>\n" * 100_000,  # 18 100,000 opening answer tags, never closed
    "</answer>\n" * 100_000,  # 19 100,000 closing tags, never opened
    "<think>\n" * 200_000,  # 20 200,000 think tags (1.6 MB)
    "\n</think>\n<answer>\n" * 260_000,  # 21 5 MB of the format regex's middle part: quadratic for re.match
    "<think></think><answer>" * 220_000,  # 22 5 MB of the eval/code regex's bridge: quadratic for re.match/search
    "<think>\n" + "\n</think>\n<answer>\n\n</answer>x" * 150_000,  # 23 tags that almost form the format, 4 MB
    "x" * (5 * MB),  # 24 5 MB of one letter
    "1" * (5 * MB),  # 25 5 MB of digits (one 5-million-digit number)
    "<answer>\n" + "1" * (5 * MB) + TAIL,  # 26 a 5-million-digit answer
    "<answer>\n" + "9" * 4301 + TAIL,  # 27 just above Python's int-to-str digit limit (4300)
    "<answer>\n١٨\n</answer>",  # 28 Arabic-Indic digits 18
    "<answer>\n１８\n</answer>",  # 29 full-width digits 18
    "<answer>\n¹⁸\n</answer>",  # 30 superscript digits
    "<answer>\n𝟏𝟖\n</answer>",  # 31 mathematical bold digits (astral plane)
    "<answer>\n\u202e81\u202c\n</answer>",  # 32 right-to-left override around digits
    "<answer>\n1\u200b8\n</answer>",  # 33 zero-width space inside a number
    "<answer>\n1\u03018\n</answer>",  # 34 combining accent inside a number
    "<answer>\n18",  # 35 answer block never closed
    "</answer>\n18\n<answer>",  # 36 tags in the wrong order
    "<answer>\n\\boxed{18\n</answer>",  # 37 unbalanced \boxed
    "\\boxed{" * 100_000,  # 38 100,000 unclosed \boxed
    "$" * MB,  # 39 a million dollar signs (empty math environments)
    "$$" + "1+" * MB + "1$$",  # 40 a 2 MB sum inside display math
    "<answer>\n1e100000\n</answer>",  # 41 float overflow literal
    "<answer>\n1e-100000\n</answer>",  # 42 float underflow literal
    "<answer>\nnan\n</answer>",  # 43 NaN literal
    "<answer>\n-inf\n</answer>",  # 44 infinity literal
    "<answer>\n$\\frac{1}{0}$\n</answer>",  # 45 division by zero
    "<answer>\n0/0\n</answer>",  # 46 zero over zero
    "<answer>\n$x = 10^{10^{10}}, y = 3$\n</answer>",  # 47 tower inside an equation system
    "<answer>\n$\\begin{pmatrix}" + "1 & " * 10_000 + "1\\end{pmatrix}$\n</answer>",  # 48 10,001-column matrix
    "<answer>\n$\\sum_{i=1}^{10^{10}} i^{10^{10}}$\n</answer>",  # 49 huge symbolic sum
    "<answer>\n$\\int_0^{10^{10}} x^{10^{10}} dx$\n</answer>",  # 50 huge definite integral
    "<answer>\n$\\prod_{k=1}^{10^{9}} k$\n</answer>",  # 51 product = (10^9)!
    "<answer>\n$" + "\\sqrt{" * 50 + "2" + "}" * 50 + "$\n</answer>",  # 52 nesting 50 deep (above the guard)
    "<answer>\n$" + "(" * 9 + "18" + ")" * 9 + "$\n</answer>",  # 53 nesting 9 (just above the guard)
    "<answer>\n$" + "(" * 8 + "18" + ")" * 8 + "$\n</answer>",  # 54 nesting 8 (just inside the guard)
    "<answer>\n" + "-" * 100_000 + "18" + TAIL,  # 55 100,000 unary minus signs
    "<answer>\n10" + "!" * 6 + TAIL,  # 56 iterated factorial ((((10!)!)!)!)!)!
    "<answer>\n$\\Gamma(10^{10})$\n</answer>",  # 57 gamma of a big number
    "<answer>\n$10^{10}!$\n</answer>",  # 58 factorial of 10^10
    "<answer>\n$1.5\\times10^{999999999}$\n</answer>",  # 59 scientific notation with a billion-digit exponent
    "<answer>\n$\\sin(10^{10^{5}})$\n</answer>",  # 60 numeric evaluation needing 100,000 digits of precision
    "<answer>\n$x^{x^{x^{x}}}$\n</answer>",  # 61 symbolic tower
    "<answer>\n$(x+1)^{10000} - (x+1)^{10000}$\n</answer>",  # 62 expansion bomb if simplified naively
    "<answer>\n$\\lfloor 10^{10^{10}} \\rfloor \\bmod 7$\n</answer>",  # 63 modular arithmetic on a tower
    "<answer>\n$\\{" + "4," * 10_000 + "4\\}$\n</answer>",  # 64 a set with 10,001 elements
    "<answer>\n" + "\\text{" * 10_000 + TAIL,  # 65 10,000 unclosed \text{
    "<answer>\n" + "\\\\" * 100_000 + TAIL,  # 66 200,000 backslashes
    "<answer>\n" + "\\begin{array}" * 10_000 + TAIL,  # 67 unclosed environments
    "<think>\r\nx\r\n</think>\r\n<answer>\r\n18\r\n</answer>",  # 68 CRLF line ends (not the format)
    "<ANSWER>\n18\n</ANSWER>",  # 69 upper-case tags
    "<answer>\n18\n</answer>" * 200_000,  # 70 3.6 MB of repeated answer blocks
    "<answer>\n1_000\n</answer>",  # 71 underscore digit grouping (Python's int() accepts it)
    "<answer>\n0x12\n</answer>",  # 72 hexadecimal literal
    "<answer>\n  +0018  \n</answer>",  # 73 sign, leading zeros and padding
    "<answer>\n" + "A" * MB + TAIL,  # 74 a million letters A (letter tasks)
    "<answer>\n(" + "B" * 1000 + ")\n</answer>",  # 75 parenthesised run of letters
    "<answer>\n" + "B)" * 100_000 + TAIL,  # 76 repeated 'B)' choice markers
    "<answer>\n$\\left(" * 1000 + TAIL,  # 77 1000 unclosed \left(
    "<answer>\n$e^{e^{e^{e^{e}}}}$\n</answer>",  # 78 exponential tower of e (float overflow in evalf)
    "<answer>\n$\\tan(\\pi/2)$\n</answer>",  # 79 pole of tan
    "<answer>\n$\\lim_{x\\to\\infty} x^x$\n</answer>",  # 80 divergent limit
    "<answer>\n$\\sqrt{-1}^{10^{100}}$\n</answer>",  # 81 complex power with a googol exponent
    "<answer>\n$10^{-10^{10}}$\n</answer>",  # 82 tiny number with a tower exponent
    "<answer>\n$\\underbrace{" * 500 + TAIL,  # 83 500 unclosed \underbrace
    "<answer>\n$\\frac{" + "9" * 3000 + "}{" + "7" * 3000 + "}$\n</answer>",  # 84 3000-digit fraction
    "\U0010ffff" * 100_000 + "<answer>\n18\n</answer>",  # 85 last code point, astral, before a good answer
    "\ufeff<answer>\n\ufeff18\ufeff\n</answer>",  # 86 byte-order marks around the answer
]
