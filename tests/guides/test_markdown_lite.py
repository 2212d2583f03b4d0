"""The guides' converter: the Markdown the docs use, and nothing of the source as markup."""

from __future__ import annotations

from guides.markdown_lite import headings, to_html


def no_links(target: str) -> str | None:
    return None


def test_blocks_the_docs_use():
    source = (
        "# Title\n\nA paragraph\non two lines.\n\n"
        "- one\n- two, `code`\n  continued\n\n"
        "1. first\n2. second\n\n"
        "```sh\nmake setup\n```\n\n"
        "    fsched sinfo   # indented\n\n"
        "| a | b |\n|---|---|\n\n"
        "<!-- readme-test: controller -->\n"
    )
    assert to_html(source, no_links) == "\n".join(
        [
            '<h1 id="title">Title</h1>',
            "<p>A paragraph on two lines.</p>",
            "<ul><li>one</li><li>two, <code>code</code> continued</li></ul>",
            "<ol><li>first</li><li>second</li></ol>",
            '<pre tabindex="0"><code>make setup</code></pre>',
            '<pre tabindex="0"><code>fsched sinfo   # indented</code></pre>',
            '<pre class="table" tabindex="0">| a | b |\n|---|---|</pre>',
        ]
    )


def test_links_go_through_the_callers_mapping():
    def mapping(target: str) -> str | None:
        return "/help/admin/" if target == "admin-guide.md" else None

    html = to_html(
        "See [the **admin** guide](admin-guide.md), [a site](https://example.org/a?b=1&c=2), "
        "[this](#top), [a script](other.sh) and `[not](a-link.md)`.",
        mapping,
    )
    assert html == (
        '<p>See <a href="/help/admin/">the <strong>admin</strong> guide</a>, '
        '<a href="https://example.org/a?b=1&amp;c=2">a site</a>, <a href="#top">this</a>, '
        "a script and <code>[not](a-link.md)</code>.</p>"
    )


def test_headings_skip_code_blocks():
    source = "# A\n\n```\n# not a heading\n```\n\n## B & C\n"
    assert headings(source) == [(1, "A"), (2, "B & C")]
    assert '<h2 id="b--c">B &amp; C</h2>' in to_html(source, no_links)
