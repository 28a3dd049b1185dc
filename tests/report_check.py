#!/usr/bin/python3
"""tests/report_check.py - what tests/report_test.sh reads with tools that are
not ours: the numbers of a `cjc report` page (Python's html.parser), and the
OpenMetrics text of `cjc stats --format=openmetrics` (prometheus_client's
parser, Debian's python3-prometheus-client).

    report_check.py page FILE       the page's numbers as JSON:
        {"section:summary": {"hits": 3, ...}, "target:app": {...},
         "store:DIR": {...}, "cause:CAUSE": {...}, "reason:R": {...},
         "remote:URL": {...}, "charts": {"svg": N, "rect": N}}
      each element with data-stat and data-value, under the nearest row that
      names what it counts (data-target, data-store, ...) or else its section.
    report_check.py metrics FILE    the samples as JSON: {"NAME{LABELS}": value}
    report_check.py yaml FILE       a YAML file as JSON (python3-yaml)
"""
import json
import sys
from html.parser import HTMLParser

ROW_KEYS = ("data-target", "data-store", "data-cause", "data-reason", "data-remote")
VOID = {"meta", "br", "img", "link", "input", "hr", "rect", "line"}


class Page(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack = []  # (tag, key or None)
        self.numbers = {}
        self.charts = {"svg": 0, "rect": 0}

    def owner(self):
        for _, key in reversed(self.stack):
            if key:
                return key
        return "page"

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        key = None
        for name in ROW_KEYS:
            if name in a:
                key = name[5:] + ":" + a[name]
        if tag == "section" and "id" in a:
            key = "section:" + a["id"]
        if tag == "svg" and "chart" in (a.get("class") or "").split():
            self.charts["svg"] += 1
        if tag == "rect" and any(t == "svg" for t, _ in self.stack):
            self.charts["rect"] += 1
        if "data-stat" in a and "data-value" in a:
            owner = key or self.owner()
            text = a["data-value"]
            value = float(text) if "." in text else int(text)
            self.numbers.setdefault(owner, {})[a["data-stat"]] = value
        if tag not in VOID:
            self.stack.append((tag, key))

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if tag not in VOID:
            self.stack.pop()

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        while self.stack:
            if self.stack.pop()[0] == tag:
                break


def page(path):
    p = Page()
    with open(path, encoding="utf-8") as f:
        p.feed(f.read())
    p.numbers["charts"] = p.charts
    return p.numbers


def metrics(path):
    from prometheus_client.openmetrics.parser import text_string_to_metric_families
    out = {}
    with open(path, encoding="utf-8") as f:
        for family in text_string_to_metric_families(f.read()):
            for s in family.samples:
                labels = ",".join("%s=%s" % kv for kv in sorted(s.labels.items()))
                out["%s{%s}" % (s.name, labels)] = s.value
    return out


def yaml_file(path):
    import yaml
    with open(path, encoding="utf-8") as f:
        return yaml.safe_load(f)


def main():
    what, path = sys.argv[1], sys.argv[2]
    doc = {"page": page, "metrics": metrics, "yaml": yaml_file}[what](path)
    json.dump(doc, sys.stdout, indent=1, sort_keys=what != "yaml")
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
