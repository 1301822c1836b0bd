#!/usr/bin/env python3
"""clients/python/gen_types.py - writes uniap_client/types.py from schema/openapi.json.

One TypedDict per component schema of the OpenAPI document (the documents,
requests, results, jobs and events of the API), in the functional form so that
every JSON member name is kept as it is ("1" of a TP table, names that are
Python keywords).  Members the schema requires are Required[...]; the others
may be absent.  JSON Schema maps to typing as: string str, integer int, number
float, boolean bool, null None, array List[...], an object with properties its
own TypedDict (nested ones named Parent_member), an object without Dict[str, ...],
enum and const Literal[...], oneOf/anyOf Union[...], allOf its first member,
$ref the component's name.  What typing cannot state (ranges, patterns,
"not") is left to the server, which checks every request and names the field
at fault.

    python3 clients/python/gen_types.py            # rewrite the file
    python3 clients/python/gen_types.py --check    # exit 1 when it is stale

Run from anywhere; reads and writes paths relative to the repository.
"""
import json
import keyword
import os
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..'))
DOC = os.path.join(ROOT, 'schema', 'openapi.json')
OUT = os.path.join(ROOT, 'clients', 'python', 'uniap_client', 'types.py')
REF = '#/components/schemas/'


class Gen:
    def __init__(self, schemas):
        self.schemas = schemas
        self.out = []      # (name, source) of every TypedDict, in order of completion
        self.done = set()

    def typ(self, s, hint):
        """The annotation of schema s (as source text); hint names a nested TypedDict."""
        if s is True or s == {} or s is None:
            return 'Any'
        if s is False:
            return 'NoReturn'
        if '$ref' in s:
            return repr(s['$ref'][len(REF):]) if s['$ref'].startswith(REF) and '/' not in s['$ref'][len(REF):] else 'Any'
        if 'const' in s:
            return 'Literal[%s]' % repr(s['const'])
        if 'enum' in s:
            return 'Literal[%s]' % ', '.join(repr(v) for v in s['enum'])
        for k in ('oneOf', 'anyOf'):
            if k in s:
                alts = []
                for i, a in enumerate(s[k]):
                    t = self.typ(a, '%s_%d' % (hint, i))
                    if t not in alts:
                        alts.append(t)
                return alts[0] if len(alts) == 1 else 'Union[%s]' % ', '.join(alts)
        if 'allOf' in s and s['allOf']:
            return self.typ(s['allOf'][0], hint)
        t = s.get('type')
        if isinstance(t, list):
            alts = [self.typ(dict(s, type=x), hint) for x in t]
            return 'Union[%s]' % ', '.join(alts)
        if t == 'string':
            return 'str'
        if t == 'integer':
            return 'int'
        if t == 'number':
            return 'float'
        if t == 'boolean':
            return 'bool'
        if t == 'null':
            return 'None'
        if t == 'array':
            return 'List[%s]' % self.typ(s.get('items', {}), hint + '_item')
        if t == 'object' or 'properties' in s:
            if s.get('properties'):
                return repr(self.typed_dict(hint, s))
            extra = s.get('additionalProperties')
            return 'Dict[str, %s]' % (self.typ(extra, hint + '_value') if isinstance(extra, dict) else 'Any')
        return 'Any'

    def typed_dict(self, name, s):
        if name in self.done:
            return name
        self.done.add(name)
        req = set(s.get('required', []))
        fields = []
        for k, v in s.get('properties', {}).items():
            t = self.typ(v, '%s_%s' % (name, k.replace('-', '_')))
            fields.append('    %r: %s,' % (k, 'Required[%s]' % t if k in req else 'NotRequired[%s]' % t))
        doc = (s.get('description') or s.get('title') or '').strip().replace('\\', '\\\\').replace('"""', "'''")
        src = '%s = TypedDict(%r, {\n%s\n}, total=False)\n' % (name, name, '\n'.join(fields))
        if doc:
            src += '%s.__doc__ = """%s"""\n' % (name, doc)
        self.out.append((name, src))
        return name

    def run(self):
        aliases = []
        for name, s in self.schemas.items():
            if isinstance(s, dict) and s.get('properties'):
                self.typed_dict(name, s)
            else:
                aliases.append('%s = %s\n' % (name, self.typ(s, name)))
        return aliases


def render():
    doc = json.load(open(DOC))
    g = Gen(doc['components']['schemas'])
    aliases = g.run()
    for name in list(g.done) + [a.split(' ')[0] for a in aliases]:
        if keyword.iskeyword(name) or not name.isidentifier():
            raise SystemExit('gen_types.py: component name %r is not a Python name' % name)
    head = ('"""uniap_client.types - the API\'s JSON documents as TypedDicts.\n\n'
            'Generated from schema/openapi.json (info.version %s) by clients/python/gen_types.py;\n'
            'do not edit: run that script after the document changes (tests/cli/python-client.sh\n'
            'fails while this file is stale).  Forward references are strings, so the\n'
            'order of the definitions does not matter to type checkers.\n"""\n'
            '# flake8: noqa\n'
            'from typing import Any, Dict, List, Literal, NoReturn, NotRequired, Required, TypedDict, Union\n\n'
            % doc['info']['version'])
    body = '\n'.join(src for _, src in g.out)
    return head + body + '\n' + ''.join(aliases) + '\n__all__ = %r\n' % sorted(g.done | {a.split(' ')[0] for a in aliases})


def main():
    text = render()
    if sys.argv[1:] == ['--check']:
        cur = open(OUT).read() if os.path.exists(OUT) else ''
        if cur != text:
            print('gen_types.py: %s is stale: run python3 clients/python/gen_types.py' % os.path.relpath(OUT, ROOT))
            return 1
        return 0
    if sys.argv[1:]:
        print(__doc__)
        return 2
    open(OUT, 'w').write(text)
    return 0


if __name__ == '__main__':
    sys.exit(main())
