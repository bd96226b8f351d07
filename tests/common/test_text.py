from django.template import Context, Template

from apps.common.text import breakable


def test_an_address_may_break_after_its_seams_and_nowhere_else():
    assert breakable("owner@demo.gatehouse.test") == "owner@<wbr>demo.<wbr>gatehouse.<wbr>test"


def test_breakable_escapes_what_it_is_given_without_breaking_an_entity():
    html = breakable('https://x.test/a?b=1&c=<script>"')
    assert "<script>" not in html and "&amp;<wbr>c" in html and "&lt;script&gt;" in html


def test_every_template_has_breakable():
    rendered = Template("{{ email|breakable }}").render(Context({"email": "a@b.c"}))
    assert rendered == "a@<wbr>b.<wbr>c"


def test_json_pretty_indents_json_and_leaves_anything_else_as_it_came():
    from apps.common.text import json_pretty

    assert json_pretty('{"a":[1,"é"]}') == '{\n  "a": [\n    1,\n    "é"\n  ]\n}'
    assert json_pretty("<html>Bad gateway</html>") == "<html>Bad gateway</html>"
    assert json_pretty(None) == ""
