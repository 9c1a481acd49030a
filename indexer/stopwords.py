"""Words that carry no subject, in folded form. Used on the query side only (the index keeps them)."""

from .text import fold_text

_EN = """a about above after again all also am an and any are as at be because been before being below
between both but by can could did do does doing done down during each else even ever few for from
further get gets go going got had has have having he her here hers him his how i if in into is it its
itself just let lets like make me more most much must my no nor not now of off ok okay on once only or
other our ours out over own please really same she should so some still such sure than thank thanks that
the their them then there these they this those through to too try under until up us use used using very
want was way we well were what when where which while who whom why will with would yeah yes yet you
your yours hey hi hello hmm oh right thing things something anything know think need see look looks good
great fine cool nice again back one two new also going can't don't it's i'm let's that's what's
ahead proceed continue sounds perfect awesome done lgtm alright nope exactly agreed correct wait stop
go went doing did maybe probably actually basically just lol haha wow damn next now then""".split()

_TR = """acaba ama ancak artık aslında az bana bazı belki ben beni benim bile bir biraz birçok birkaç
biz bize bizi bizim bu buna bunda bundan bunu bunun burada böyle çok çünkü da daha de değil diye
en evet falan filan gibi göre hangi hani hem hemen henüz hep hepsi her herhangi hiç hiçbir için ile
ise işte kadar kendi ki kim mı mi mu mü nasıl ne neden nerede nereye niye o olan olarak oldu olduğu
olsun olur ona ondan onlar onu onun orada öyle sadece sana sanki sen seni senin siz size sizi sizin
şey şeyi şimdi şu şuna şunu tabi tabii tamam teşekkür teşekkürler var ve veya ya yani yine yok yoksa
zaten lütfen merhaba selam hadi haydi peki olmuş olmaz olabilir mısın misin musun müsün mıyız miyiz
bakalım bak bakar yap yapalım yapar yaptık et edelim eder dur devam geç geçelim güzel iyi süper harika
da'da de'de nedir nedi bi bişey birşey şeyler tamamdır oldu olmuş anladım anlaşıldı aynen
kesinlikle doğru yanlış sonra önce bence sence galiba herhalde mesela hmm ok okey oki""".split()

STOPWORDS = frozenset(fold_text(w) for w in _EN + _TR)


def informative(terms) -> list[str]:
    """Query terms that can carry a subject: not stop words, not single letters."""
    return [t for t in terms if t not in STOPWORDS and (len(t) > 1 or not t.isascii())]
