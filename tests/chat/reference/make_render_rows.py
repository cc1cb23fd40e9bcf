# Regenerates the rows of tests/chat/render_test.cc from the reference Jinja2 (python3-jinja2, 3.1)
# under Hugging Face's settings. Usage: python3 make_render_rows.py render_rows.txt > rows.inc
# Each line of render_rows.txt is one template ('⏎' stands for a newline, '##' starts a comment);
# the context is CTX below (the same JSON as context() in render_test.cc).
import json, sys, datetime
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2 import ext, exceptions
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[ext.loopcontrols])
def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
    return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
def raise_exception(m): raise exceptions.TemplateError(m)
def strftime_now(f): return datetime.datetime(2026,1,15,9,30,0).strftime(f)
env.filters['tojson']=tojson
env.globals['raise_exception']=raise_exception
env.globals['strftime_now']=strftime_now
CTX = {"msgs":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello","tool_calls":[{"function":{"name":"f","arguments":{"b":1,"a":[1.5,"x"]}}}]},{"role":"user","content":"Bye"}],
       "d":{"b":2,"a":1,"C":3}, "s":"  Hello World  ", "n":None, "u":"héllo wörld", "words":["b","A","c","a"], "f":2.5, "t":True}
def run(src):
    try:
        return True, env.from_string(src).render(**CTX)
    except Exception as e:
        return False, str(e)
def cstr(s):
    out='"'
    for ch in s:
        o=ord(ch)
        if ch=='"': out+='\\"'
        elif ch=='\\': out+='\\\\'
        elif ch=='\n': out+='\\n'
        elif ch=='\t': out+='\\t'
        elif o<0x20: out+='\\x%02x"  "'%o
        else: out+=ch
    return out+'"'
cases=[l.rstrip('\n') for l in open(sys.argv[1]) if l.strip() and not l.startswith('##')]
for c in cases:
    src=c.replace('⏎','\n')
    ok,out=run(src)
    if ok: print('    {%s, %s},' % (cstr(src), cstr(out)))
    else: print('    {%s, nullptr, %s},' % (cstr(src), cstr(out)))
