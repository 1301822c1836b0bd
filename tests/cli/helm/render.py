#!/usr/bin/env python3
"""render.py CHART [--set KEY=VALUE ...] [--release NAME] - renders a Helm chart's templates with a
small, strict subset of Go templates, for tests/cli/helm.sh where no helm binary is to be had
(Helm is neither a Debian 12 package nor on npm).

The subset is what deploy/helm/uniapd uses, with Go's and Helm's semantics: text and actions
{{ }} with {{- and -}} trimming white space; if / else / end; pipelines (a | f b: f's last
argument is a's value) with parentheses; .Values, .Release.Name, .Release.Namespace, .Chart.Name,
.Chart.Version, .Chart.AppVersion; string and integer literals; eq, ne, and, or, not, default,
printf (%s %d %v), required, quote, toYaml (keys sorted, no final newline, as Helm's) and
nindent / indent.  Anything else is an error naming the template and the action, so the chart
cannot grow a construct this renderer would get wrong.  Go's truth: false, 0, "", nil and empty
maps or lists are false.  Prints the manifests as one YAML stream (a "# Source:" line and "---"
before each template's output, as helm template does); NOTES.txt is rendered too and printed to
stderr.  Exit 1 with "render: ..." on any error (a required value missing says its message).
"""
import json
import os
import re
import sys

import yaml


class RenderError(Exception):
    pass


def truth(v):
    return not (v is None or v is False or v == 0 and not isinstance(v, bool) or v == '' or v == {} or v == [])


def go_str(v):
    if v is None:
        return '<no value>'
    if isinstance(v, bool):
        return 'true' if v else 'false'
    if isinstance(v, float) and v.is_integer():
        return str(int(v))
    if isinstance(v, (dict, list)):
        raise RenderError('a map or list printed as text (use toYaml)')
    return str(v)


def to_yaml(v):
    return yaml.safe_dump(v, default_flow_style=False, sort_keys=True).rstrip('\n')


def printf(fmt, *args):
    out, i = [], 0
    for m in re.finditer(r'%([sdv%])|[^%]+', fmt):
        if m.group(1) == '%':
            out.append('%')
        elif m.group(1):
            if i >= len(args):
                raise RenderError('printf: too few arguments')
            out.append(go_str(args[i]))
            i += 1
        else:
            out.append(m.group(0))
    return ''.join(out)


def required(msg, v):
    if not truth(v):
        raise RenderError(msg)
    return v


FUNCS = {
    'eq': lambda a, b: a == b,
    'ne': lambda a, b: a != b,
    'and': lambda *a: next((x for x in a if not truth(x)), a[-1]),
    'or': lambda *a: next((x for x in a if truth(x)), a[-1]),
    'not': lambda a: not truth(a),
    'default': lambda d, v=None: v if truth(v) else d,
    'printf': printf,
    'required': required,
    'quote': lambda v: json.dumps(go_str(v)),
    'toYaml': to_yaml,
    'nindent': lambda n, s: '\n' + '\n'.join(' ' * n + l if l else l for l in s.split('\n')),
    'indent': lambda n, s: '\n'.join(' ' * n + l if l else l for l in s.split('\n')),
}

TOKEN = re.compile(r'\s*(?:(?P<str>"(?:[^"\\]|\\.)*")|(?P<num>-?\d+)|(?P<field>(?:\.[A-Za-z_][A-Za-z0-9_]*)+)'
                   r'|(?P<ident>[A-Za-z_][A-Za-z0-9_]*)|(?P<op>[()|]))')


def tokenize(src):
    toks, pos = [], 0
    src = src.strip()
    while pos < len(src):
        m = TOKEN.match(src, pos)
        if not m or m.end() == pos:
            raise RenderError('cannot read "%s" at "%s"' % (src, src[pos:]))
        kind = m.lastgroup
        toks.append((kind, m.group(kind)))
        pos = m.end()
    return toks


NOPIPE = object()  # no value piped into a command


class Expr:
    def __init__(self, toks, ctx):
        self.toks, self.i, self.ctx = toks, 0, ctx

    def peek(self):
        return self.toks[self.i] if self.i < len(self.toks) else (None, None)

    def pipeline(self):
        v = self.command(NOPIPE)
        while self.peek() == ('op', '|'):
            self.i += 1
            v = self.command(v)
        return v

    def operand(self):
        kind, val = self.peek()
        self.i += 1
        if kind == 'str':
            return json.loads(val)
        if kind == 'num':
            return int(val)
        if kind == 'field':
            return self.field(val)
        if (kind, val) == ('op', '('):
            v = self.pipeline()
            if self.peek() != ('op', ')'):
                raise RenderError('a ( without its )')
            self.i += 1
            return v
        raise RenderError('unexpected %s' % val)

    def command(self, piped):
        kind, val = self.peek()
        if kind == 'ident':
            if val not in FUNCS:
                raise RenderError('function %s is not in the subset' % val)
            self.i += 1
            args = []
            while self.peek()[0] is not None and self.peek() not in (('op', '|'), ('op', ')')):
                args.append(self.operand())
            if piped is not NOPIPE:
                args.append(piped)
            try:
                return FUNCS[val](*args)
            except TypeError:
                raise RenderError('%s: wrong number of arguments (%d)' % (val, len(args)))
        if piped is not NOPIPE:
            raise RenderError('a value piped into a non-function')
        return self.operand()

    def field(self, path):
        parts = path.split('.')[1:]
        if parts[0] not in ('Values', 'Release', 'Chart'):
            raise RenderError('.%s is not in the subset' % parts[0])
        v = self.ctx
        for p in parts:
            if not isinstance(v, dict):
                raise RenderError('%s: %s is not a map' % (path, p))
            v = v.get(p)
        return v


ACTION = re.compile(r'\{\{(-?)\s*(.*?)\s*(-?)\}\}', re.S)


def render(text, ctx, name):
    """The template text rendered with ctx ({"Values": ..., "Release": ..., "Chart": ...})."""
    parts, pos = [], 0
    for m in ACTION.finditer(text):
        parts.append(('text', text[pos:m.start()]))
        parts.append(('action', m.group(2), m.group(1) == '-', m.group(3) == '-'))
        pos = m.end()
    parts.append(('text', text[pos:]))
    # trimming: {{- eats the white space before, -}} the white space after
    for i, p in enumerate(parts):
        if p[0] == 'action':
            if p[2] and i > 0:
                parts[i - 1] = ('text', parts[i - 1][1].rstrip(' \t\n\r'))
            if p[3] and i + 1 < len(parts):
                parts[i + 1] = ('text', parts[i + 1][1].lstrip(' \t\n\r'))
    out, stack = [], []  # stack of [active, taken] per open if
    active = lambda: all(a for a, _ in stack)
    for p in parts:
        try:
            if p[0] == 'text':
                if active():
                    out.append(p[1])
                continue
            src = p[1]
            if src.startswith('/*'):
                continue
            word = src.split(None, 1)[0] if src else ''
            if word == 'if':
                cond = truth(Expr(tokenize(src[2:]), ctx).pipeline()) if active() else False
                stack.append([cond, cond])
            elif word == 'else':
                if not stack or src != 'else':
                    raise RenderError('an else without its if (or an else if, not in the subset)')
                stack[-1] = [not stack[-1][1], True]
            elif word == 'end':
                if not stack:
                    raise RenderError('an end without its if')
                stack.pop()
            elif word in ('range', 'with', 'define', 'template', 'include', 'block', 'tpl', 'lookup'):
                raise RenderError('%s is not in the subset' % word)
            elif active():
                e = Expr(tokenize(src), ctx)
                v = e.pipeline()
                if e.i != len(e.toks):
                    raise RenderError('trailing words')
                out.append(go_str(v))
        except RenderError as err:
            raise RenderError('%s: {{ %s }}: %s' % (name, p[1], err))
    if stack:
        raise RenderError('%s: an if without its end' % name)
    return ''.join(out)


def merge(base, key, value):
    keys = key.split('.')
    d = base
    for k in keys[:-1]:
        d = d.setdefault(k, {})
    d[keys[-1]] = yaml.safe_load(value) if value not in ('',) else ''


def main(argv):
    chart, sets, release = None, [], 'uniap'
    i = 0
    while i < len(argv):
        if argv[i] == '--set':
            sets.append(argv[i + 1])
            i += 2
        elif argv[i] == '--release':
            release = argv[i + 1]
            i += 2
        else:
            chart = argv[i]
            i += 1
    meta = yaml.safe_load(open(os.path.join(chart, 'Chart.yaml')))
    values = yaml.safe_load(open(os.path.join(chart, 'values.yaml')))
    for s in sets:
        k, _, v = s.partition('=')
        merge(values, k, v)
    ctx = {'Values': values, 'Release': {'Name': release, 'Namespace': 'default'},
           'Chart': {'Name': meta['name'], 'Version': meta['version'], 'AppVersion': meta.get('appVersion')}}
    tdir = os.path.join(chart, 'templates')
    stream = []
    try:
        for name in sorted(os.listdir(tdir)):
            text = render(open(os.path.join(tdir, name)).read(), ctx, 'templates/' + name)
            if name == 'NOTES.txt':
                sys.stderr.write(text)
                continue
            if text.strip():
                stream.append('---\n# Source: %s/templates/%s\n%s\n' % (meta['name'], name, text.strip('\n')))
    except RenderError as e:
        print('render: %s' % e, file=sys.stderr)
        return 1
    sys.stdout.write(''.join(stream))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
