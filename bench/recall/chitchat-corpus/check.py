import json, re, collections, sys
pat = [re.compile(p) for p in [
 r'(?i)\b(password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key)\s*[:=]\s*\S+',
 r'AKIA[0-9A-Z]{16}', r'-----BEGIN', r'\bgh[pousr]_[A-Za-z0-9]{20,}', r'xox[abpr]-', r'\bsk-[A-Za-z0-9]{16,}',
 r'\b[A-Za-z0-9+/=_-]{32,}\b', r'\b[0-9a-f]{24,}\b', r'://[^/\s:]+:[^@\s]+@']]
allq = {}
for fn, pre, n_exp, styles in (('/work/corpus/chitchat.jsonl','cc',1200,{'reaction','steering','smalltalk','general-programming','general-task'}),
                               ('/work/corpus/team.jsonl','tm',700,{'short-task','team-question','team-with-chitchat'})):
    ids=set(); qs=set(); st=collections.Counter(); lg=collections.Counter(); problems=[]
    for ln, line in enumerate(open(fn, encoding='utf-8'),1):
        o=json.loads(line)
        assert set(o)=={'id','query','lang','style'}, o
        assert re.fullmatch(pre+r'\d{4}', o['id']) and o['id'] not in ids, o['id']; ids.add(o['id'])
        assert o['lang'] in ('tr','en','mixed') and o['style'] in styles, o
        k=' '.join(o['query'].casefold().split()); assert k not in qs, o; qs.add(k)
        assert k not in allq, ('cross-file dup', o); 
        st[o['style']]+=1; lg[o['lang']]+=1
        for p in pat:
            if p.search(o['query']): problems.append((o['id'], p.pattern, o['query']))
    allq.update(dict.fromkeys(qs))
    assert '\\u' not in open(fn,encoding='utf-8').read()
    print(fn, 'lines', len(ids), 'expected', n_exp)
    print('  style', dict(st)); print('  lang', dict(lg), {k: f'{v/len(ids):.0%}' for k,v in lg.items()})
    print('  secret-looking', problems)
