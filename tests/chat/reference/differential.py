# Differential test, not run by ctest: random conversations (roles, tool calls, content parts,
# reasoning, tools with varied schemas, enable_thinking...) through every template in TEMPLATES
# (default shared/templates/sources), rendered by the reference Jinja2 (python3-jinja2) and by
# `zinc template` (ZINC_BIN, default build/zinc); prints mismatches.
# Usage: python3 differential.py SEED CASES_PER_TEMPLATE
import json, random, subprocess, sys, datetime, os
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
S=os.environ.get('TEMPLATES','../shared/templates/sources')
rng=random.Random(int(sys.argv[1]) if len(sys.argv)>1 else 1)
texts=["Hello!", "  padded  ", "multi\nline\n", "<think>\nhmm\n</think>\n\nanswer", "Üñíçødé 🦙 \"q\" 'a'", "", "{{ not jinja }}", "\ttab", "x"*3, "<tool_response>r</tool_response>"]
def rand_args():
    return rng.choice([{"city":"Paris"}, {"a":1,"b":[1,2.5,None,True],"c":{"d":"e"}}, {}, '{"raw": "json string"}', {"q":"ü\n"},
        {"f":1e-7,"g":1e22,"h":-0.0,"i":12345678901234,"j":"\u2028\x01"}, {"ключ":["з", {"x":[]}]}, ""])
def rand_tools():
    props = {"city":{"type":"string","description":"The city"},
             "days":{"type":"integer","description":"Days","default":3},
             "units":{"type":"string","enum":["c","f"]},
             "tags":{"type":"array","items":{"type":"string"}},
             "opts":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]},
             "flag":{"type":["boolean","null"]}}
    tools=[]
    for i in range(rng.randint(1,3)):
        keys = rng.sample(list(props), rng.randint(0, len(props)))
        tools.append({"type":"function","function":{"name":"fn%d"%i,"description":rng.choice(["Does a thing","Multi\nline desc"]),
            "parameters":{"type":"object","properties":{k:props[k] for k in keys},"required":keys[:1]}}})
    return tools
def rand_messages():
    msgs=[]
    if rng.random()<0.4: msgs.append({"role":"system","content":rng.choice(texts)})
    n=rng.randint(1,7)
    for i in range(n):
        r=rng.random()
        if r<0.35: msgs.append({"role":"user","content":rng.choice(texts)})
        elif r<0.45:
            parts=[rng.choice([{"type":"text","text":rng.choice(texts)},{"type":"image"},{"type":"image_url","image_url":{"url":"u"}},{"type":"video"}]) for _ in range(rng.randint(1,3))]
            msgs.append({"role":rng.choice(["user","user","assistant","system"]),"content":parts})
        elif r<0.75:
            m={"role":"assistant","content":rng.choice(texts)}
            if rng.random()<0.3: m["reasoning_content"]=rng.choice(texts)
            if rng.random()<0.1: m["thinking"]=rng.choice(texts)
            if rng.random()<0.1: m["content"]=None
            msgs.append(m)
        elif r<0.9:
            calls=[{"id":rng.choice(["call_1","abcdefghi"]),"type":"function","function":{"name":"fn0","arguments":rand_args()}} for _ in range(rng.randint(1,2))]
            msgs.append({"role":"assistant","content":rng.choice(["", "Calling."]),"tool_calls":calls})
        else:
            msgs.append({"role":"tool","tool_call_id":rng.choice(["call_1","abcdefghi"]),"name":"fn0","content":rng.choice(texts+[{"temp":18,"ok":True}, [{"type":"text","text":"part"}]])})
    return msgs
def rand_case():
    c={"messages":rand_messages(),"add_generation_prompt":rng.random()<0.7,"now":"2026-01-15T09:30:00"}
    if rng.random()<0.4: c["tools"]=rand_tools()
    ctx={}
    if rng.random()<0.4: ctx["enable_thinking"]=rng.random()<0.5
    if rng.random()<0.1: ctx["reasoning_effort"]="high"
    if ctx: c["context"]=ctx
    if rng.random()<0.3: c["bos_token"]="<|begin|>"
    return c
def render_py(src, c):
    ctx=dict(messages=c["messages"], add_generation_prompt=c.get("add_generation_prompt",False), bos_token=c.get("bos_token","<s>"), eos_token=c.get("eos_token","</s>"))
    if "tools" in c: ctx["tools"]=c["tools"]
    ctx.update(c.get("context",{}))
    try: return True, env.from_string(src).render(**ctx)
    except Exception as e: return False, "%s: %s" % (type(e).__name__, e)
import tempfile
CASE_PATH=os.path.join(tempfile.mkdtemp(), 'case.json')
n=int(sys.argv[2]) if len(sys.argv)>2 else 30
bad=0; total=0; errs=0
for t in sorted(os.listdir(S)):
    src=open(os.path.join(S,t)).read()
    for i in range(n):
        c=rand_case()
        ok,want=render_py(src,c)
        json.dump(c, open(CASE_PATH,'w'), ensure_ascii=False)
        p=subprocess.run([os.environ.get('ZINC_BIN','build/zinc'),'template','--template',os.path.join(S,t),'--case',CASE_PATH],capture_output=True)
        got=p.stdout.decode('utf-8','replace'); total+=1
        if not ok: errs+=1
        if ok and (p.returncode!=0 or got!=want) or (not ok and p.returncode==0):
            bad+=1
            if bad<=8:
                print("MISMATCH", t, "py_ok=",ok, "rc=",p.returncode)
                print("  case:", json.dumps(c, ensure_ascii=False)[:600])
                print("  want:", repr(want[:300]) )
                print("  got: ", repr(got[:300]), p.stderr.decode()[:300])
                json.dump(c, open('bad%d.json'%bad,'w'), ensure_ascii=False)
print("total", total, "mismatch", bad, "python-errors", errs)
