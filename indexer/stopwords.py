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
go went doing did maybe probably actually basically just lol haha wow damn next now then
thx ty cheers ugh oops""".split()

_TR = """acaba ama ancak artık aslında az bana bazı belki ben beni benim bile bir biraz birçok birkaç
biz bize bizi bizim bu buna bunda bundan bunu bunun burada böyle çok çünkü da daha de değil diye
en evet falan filan gibi göre hangi hani hem hemen henüz hep hepsi her herhangi hiç hiçbir için ile
ise işte kadar kendi ki kim mı mi mu mü nasıl ne neden nerede nereye niye o olan olarak oldu olduğu
olsun olur ona ondan onlar onu onun orada öyle sadece sana sanki sen seni senin siz size sizi sizin
şey şeyi şimdi şu şuna şunu tabi tabii tamam teşekkür teşekkürler var ve veya ya yani yine yok yoksa
zaten lütfen merhaba selam hadi haydi peki olmuş olmaz olabilir mısın misin musun müsün mıyız miyiz
bakalım bak bakar yap yapalım yapar yaptık et edelim eder dur devam geç geçelim güzel iyi süper harika
da'da de'de nedir nedi bi bişey birşey şeyler tamamdır oldu olmuş anladım anlaşıldı aynen
kesinlikle doğru yanlış sonra önce bence sence galiba herhalde mesela hmm ok okey oki
günaydın sağol sağolun eyvallah kolay gelsin haha hehe""".split()

# General stop-word lists, not written from any prompt set: stopwords-iso 1.1 (MIT; its Turkish and English
# lists, as the PyPI package stopwordsiso 0.7.1 ships them), folded, less the words above and less the words
# that name a subject in a developer's work there (test, index, date, html, system, null, version, page,
# name, line, value, run, fix, open, order, group, state, change, numbers ...) and the words fact notes are
# asked about their history with (indexer/facts.HISTORY_WORDS), chosen by reading the list,
# not by any recall figure. Issue 34: the lists above held every word of 12 tuning chit-chat prompts, so
# chit-chat never seen was measured on a blind set (bench/recall/calib/chitchat.jsonl).
_GENERAL = """
acep acikca acikcasi adamakilli adeta ait alti altmis alty amma anca arada artyk ayrica bari baskasi batka
bazen bazy benden beri beriki bes bet bilcumle bin binaen binaenaleyh birazdan birbiri bircogu birden
birdenbire biri birice birileri birisi birkaci birkez birlikte birseyi birtey bitevi biteviye bittabi bizatihi
bizce bizcileyin bizden bizimki bizzat bosuna boylece boylecene boylelikle boylemesine boylesine bunlar
bunlari bunlarin buracikta buradan burasi busbutun butun cabuk cabukca cesitli cogu cogun cogunca cogunlukla
cokca coklari coklarinca cokluk coklukla cuk cumlesi dahi dahil dahilen daima dair dayanarak dedil defa degin
dek demin demincek deminden denli derakap derhal derken dider diger digeri doksan dokuz dolayi dolayisiyla
dort edecek eden ederek edilecek ediliyor edilmesi ediyor eger elbet elbette elli emme enikonu epey epeyce
epeyi esasen esnasinda etmesi etrafli etraflica etti ettigi ettigini evleviyetle evvel evvela evvelce evvelden
evvelemirde evveli fakat filanca gah gayet gayetle gayri gecende gecenlerde gelgelelim gene gerci gerek
gibilerden gibisinden gine girla hakeza halbuki halen halihazirda haliyle handiyse hangisi haric hasebiyle
hasili hatta hele herkes herkesin hicbiri hos hulasaten iken iki ila ilen ilgili ilk illa illaki imdi indinde
inen insermi ister itibaren itibariyla itibariyle itte iyice iyicene kaci kaffesi kah kala kanymca karsin
katrilyon kelli kendilerine kendini kendisi kendisine kendisini kere keske ketke kez keza kezalik kimden kime
kimi kimisi kimse kimsecik kimsecikler kirk kisaca kulliyen kyrk kysaca lakin leh maada madem mademki mamafih
mebni meder meger megerki megerse milyar milyon nasi nasilsa nasyl nazaran nedeniyle nedenle nedense nerde
nerden nerdeyse nere nereden neredeyse neresi netekim neye neyi neyse nicin nihayet nihayetinde nitekim obur
oburku oburu oldugunu oldukca olduklarini olmadi olmadigi olmak olmasi olmayan olsa olup olursa oluyor onca
 onceleri oncelikle onculayin onda onlardan onlari onlarin onlaryn oracik oracikta oradan oranca oranla
oraya oteki otekisi otuz oylece oylelikle oylemesine oysa oysaki oz pek pekala pekce peyderpey ragmen sahi
sahiden sayet sekiz seksen senden seyden sizden sonradan sonralari sonunda soyle suncacik sunda sundan sunlar
sunlari sunun sura suracik suracikta surasi tam tamamen tamamiyla tarafindan tayet tek timdi toyle trilyon tu
tum uc uzere vardi vasitasiyla velev velhasil velhasilikelam veyahut yahut yakinda yakindan yakinen yakinlarda
yalniz yalnizca yapacak yapilan yapilmasi yapiyor yapmak yapti yaptigi yaptigini yaptiklari yedi yeniden
yenilerde yerine yetmis yetmit yirmi yoluyla yuz yuzunden zarfinda zati zira
'll 'tis 'twas 've 10 39 a's able ableabout abroad abst accordance according accordingly across act ad added
adj adopted ae af affected affecting affects afterwards ag against ago ah ai ain't aint al allow allows almost
alone along alongside already although always amid amidst among amongst amoungst amount announce another
anybody anyhow anymore anyone anyway anyways anywhere ao apart apparently appear appreciate appropriate
approximately aq ar aren aren't arent arise around aside ask asked asking asks associated au available aw away
awfully b ba bb bd became become becomes becoming beforehand began begin beginning beginnings begins behind
beings believe beside besides best better beyond bf bg bh bj bm bn bo br brief briefly bs bt bv bw bz c c'mon
c's ca call came cannot cant case cases cause causes cc cd certain certainly cf cg ch ci ck cl clear clearly
cm cmon cn co co. come comes con concerning consequently consider considering contain containing contains
corresponding could've couldn couldn't couldnt course cr cs cu currently cv cx cy cz d dare daren't darent
dear definitely describe described despite detail didn didn't didnt differ different differently directly dj
dk dm doesn doesn't doesnt don dont doubtful downed downing downs downwards due dz e ec ed ee effect eg eh
either elsewhere end ended ending ends enough entirely er es especially et-al etc evenly evermore every
everybody everyone everything everywhere ex example except f face faces fact facts fairly far farther felt
fewer ff fi fify fill find finds fj fk fm fo followed following follows forever former forth forward
found fr furthered furthering furthermore furthers fx g ga gave gb gd ge general generally getting gf gg gh gi
give given gives giving gl gm gmt gn goes gone gotten gp gq gr greater greatest greetings gs gt gu gw gy h
hadn't hadnt happens hardly hasn hasn't hasnt haven haven't havent he'd he'll he's hed help hence here's
hereafter hereby herein heres hereupon herself hes hid himself hither hk hm hn hopefully how'd how'll how's
howbeit however hr ht hu i'd i'll i've i.e. id ie ignored ii il im immediate immediately importance important
inasmuch inc inc. indeed indicate indicated indicates inner inside insofar instead interest interested
interesting interests inward io iq ir isn isn't isnt it'd it'll itd itll ive j je jm jo jp k ke keep keeps
kept kg kh kind km kn knew known knows kp kr kw ky kz l la largely lately latter latterly lb lc least less
lest li liked likely likewise little lk ll looking lr ls lt ltd lu lv ly m ma made mainly makes making many
may mayn't maynt mc md mean means meantime meanwhile merely mg mh might might've mightn't mightnt mil mill
mine minus mk ml mm mn mo moreover mostly mp mq mr mrs ms mt must've mustn't mustnt mv mw mx myself mz n na
namely nay nc nd near nearly necessarily necessary needed needing needn't neednt needs neither never neverf
neverless nevertheless nf ng ni nl no-one nobody non none nonetheless noone normally nos noted nothing
notwithstanding nowhere np nr nu nz obtain obtained obviously often om omitted one's ones onto opposite ord
others otherwise ought oughtn't oughtnt ourselves outside overall owing p pa part parted particular
particularly parting parts past pe per perhaps pf pg ph pk pl place placed places plus pm pn possible possibly
potentially pp pr predominantly presumably primarily promptly provided provides pt put puts pw py q
qa que quickly quite qv r rather rd re readily reasonably recent recently regarding regardless regards related
relatively reserved respectively resulted resulting results ro ru rw s sa said saw say saying says sb sc sd se
sec secondly seeing seem seemed seeming seems seen sees self selves sensible sent seriously several sg sh
shall shan't shant she'd she'll she's shes should've shouldn shouldn't shouldnt show showed showing shown
showns shows si significant significantly similar similarly since sj sk sl slightly sm sn somebody someday
somehow someone somethan sometime sometimes somewhat somewhere soon sorry specifically specified specify
specifying sr st strongly substantially successfully sufficiently suggest sv sy sz t t's take taken taking tc
td tell tends tf tg th thanx that'll that've thatll thats thatve theirs themselves thence there'd there'll
there're there's there've thereafter thereby thered therefore therein therell thereof therere theres thereto
thereupon thereve they'd they'll they're they've theyd theyll theyre theyve thinks thorough thoroughly thou
though thoughh thought thoughts throug throughout thru thus til till tip tis tj tk tm tn today together took
toward towards tp tr tried tries truly trying ts tt tv tw twas twice tz u ua ug uk um un underneath undoing
unfortunately unless unlike unlikely unto upon ups upwards useful usefully usefulness uses usually uy uz v va
various vc versus vg vi via viz vn vs vu w wanted wanting wants wasn wasn't wasnt ways we'd we'll we're we've
wed welcome weren weren't werent weve wf what'd what'll what've whatever whatll whats whatve when'd when'll
when's whence whenever where'd where'll where's whereafter whereas whereby wherein wheres whereupon wherever
whether whichever whilst whither who'd who'll who's whod whoever whole wholl whomever whos whose why'd why'll
why's widely willing wish within without won won't wonder wont words work worked working works would've wouldn
wouldn't wouldnt ws x y ye you'd you'll you're you've youd youll youre yourself yourselves youve yt yu z za zm
zr
""".split()

STOPWORDS = frozenset(fold_text(w) for w in _EN + _TR) | frozenset(_GENERAL)


def informative(terms) -> list[str]:
    """Query terms that can carry a subject: not stop words, not single letters."""
    return [t for t in terms if t not in STOPWORDS and (len(t) > 1 or not t.isascii())]
