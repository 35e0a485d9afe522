"""The tokenizer: comments, strings, char literals, identifiers, numbers, positions."""

from __future__ import annotations

from lean_server.source import LineIndex, tokenize


def texts(src: str) -> list[str]:
    return [t.text for t in tokenize(src)[0]]


def test_nested_block_comments_are_one_comment() -> None:
    toks, comments = tokenize("a /- x /- y -/ axiom z -/ b")
    assert [t.text for t in toks] == ["a", "b"]
    assert len(comments) == 1 and comments[0].kind == "block"


def test_doc_and_module_doc_comments() -> None:
    _, comments = tokenize("/-- doc -/ theorem x : True := trivial\n/-! mod -/")
    assert [c.kind for c in comments] == ["doc", "moddoc"]


def test_line_comment_runs_to_end_of_line() -> None:
    assert texts("a -- sorry axiom\nb") == ["a", "b"]


def test_unclosed_block_comment_swallows_the_rest() -> None:
    toks, comments = tokenize("a /- never closed\naxiom x : False")
    assert [t.text for t in toks] == ["a"]
    assert comments[0].end == len("a /- never closed\naxiom x : False")


def test_strings_with_escapes_and_comment_markers() -> None:
    toks = tokenize('x := "a\\"/- sorry" ++ "--" y')[0]
    assert [t.kind for t in toks] == ["ident", "symbol", "string", "symbol", "string", "ident"]
    assert toks[2].text == '"a\\"/- sorry"'


def test_interpolated_string_with_nested_string() -> None:
    toks = tokenize('s!"a{"}"}b" tail')[0]
    assert [t.text for t in toks] == ['s!"a{"}"}b"', "tail"]


def test_raw_string() -> None:
    toks = tokenize('r#"has "quotes" -- and sorry"# after')[0]
    assert [t.text for t in toks] == ['r#"has "quotes" -- and sorry"#', "after"]


def test_char_literals_versus_primes() -> None:
    toks = tokenize("h' 'a' '\\n' f'' x '\\x41'")[0]
    assert [(t.kind, t.text) for t in toks] == [
        ("ident", "h'"),
        ("char", "'a'"),
        ("char", "'\\n'"),
        ("ident", "f''"),
        ("ident", "x"),
        ("char", "'\\x41'"),
    ]


def test_image_notation_is_not_a_char_literal() -> None:
    assert texts("f '' s") == ["f", "'", "'", "s"]


def test_unicode_identifiers() -> None:
    toks = tokenize("h₁' α β₂ ℕ «weird name».x Nat.succ_le λ x")[0]
    assert [(t.kind, t.text) for t in toks] == [
        ("ident", "h₁'"),
        ("ident", "α"),
        ("ident", "β₂"),
        ("ident", "ℕ"),
        ("ident", "«weird name».x"),
        ("ident", "Nat.succ_le"),
        ("symbol", "λ"),
        ("ident", "x"),
    ]


def test_search_tactic_identifiers_keep_question_mark() -> None:
    assert texts("exact? apply? rw?") == ["exact?", "apply?", "rw?"]


def test_numbers_and_projections() -> None:
    toks = tokenize("0x1F 0b101 2.5e3 h.1 12")[0]
    assert [(t.kind, t.text) for t in toks] == [
        ("number", "0x1F"),
        ("number", "0b101"),
        ("number", "2.5e3"),
        ("ident", "h"),
        ("symbol", "."),
        ("number", "1"),
        ("number", "12"),
    ]


def test_multi_char_symbols_and_hash_commands() -> None:
    assert texts("a := b => c <;> #exit #[1]") == [
        "a",
        ":=",
        "b",
        "=>",
        "c",
        "<;>",
        "#exit",
        "#",
        "[",
        "1",
        "]",
    ]


def test_positions_are_lean_positions() -> None:
    src = "theorem t :\n  ∀ α₁, α₁ = α₁ := by\n    sorry"
    toks = tokenize(src)[0]
    sorry = toks[-1]
    assert (sorry.line, sorry.column) == (3, 4)
    alpha = next(t for t in toks if t.text == "α₁")
    assert (alpha.line, alpha.column) == (2, 4)  # codepoints, not bytes
    assert LineIndex(src).position(sorry.start) == (3, 4)
