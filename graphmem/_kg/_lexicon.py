"""Word lists the extraction rules consult (first names, sentence starters, non-name acronyms,
relation, event and organisation words), written from general English, not from eval texts."""

from __future__ import annotations

__all__ = ["ACRONYMS", "COMMON_STARTERS", "COUNTER_NOUNS", "EVENT_MODIFIERS",
           "EVENT_NEEDS_MODIFIER", "EVENT_NOUNS", "FIRST_NAMES", "FUNCTION_WORDS", "HOLIDAYS",
           "NICKNAMES", "ORG_PREFIXES", "ORG_SUFFIXES", "PERSON_TITLES", "PET_NOUNS",
           "PLACE_SUFFIXES", "RELATION_NOUNS", "ROLE_STUDY_WORDS", "words"]


def words(text: str) -> frozenset[str]:
    """The lowercase words of a whitespace-separated list."""
    return frozenset(text.lower().split())


_words = words


def _tokens(text: str) -> frozenset[str]:
    return frozenset(text.split())


#: Common first names (English-speaking countries, Europe, Africa, Latin America, Asia).
FIRST_NAMES = _words("""
aaron abby abigail abdul abena abraham ada adam adaeze adebayo adele adrian adriana agnes
ahmed aidan aiko aisha akira alan alana albert alberto alejandro alex alexa alexander
alexandra alexis alfred ali alice alicia alina alison allison alma amanda amara amber amelia
amina amir amit amy ana anderson andre andrea andreas andrew andy angela angelica angelo anita
ann anna anne annie anthony antonio anya april arjun arnav arthur asha ashley aubrey audrey
austin ava ayesha ayo ayodele barbara beatrice becky bella ben benjamin bernard beth betty
bianca bill billy blake bob bobby bonnie brad bradley brandon brenda brian bridget brittany
brooke bruce bruno bryan caleb camila cameron camille carl carla carlos carmen carol caroline
carolyn carrie casey cassandra catherine cecilia celine chad charles charlie charlotte chen
cheryl chidi chiamaka chinedu chloe chris christian christina christine christopher cindy
claire clara claudia cody colin connor craig cristina crystal cynthia daisy dale dan dana
daniel daniela danielle danny daria darius darren dave david dawn dean debbie deborah denise
dennis derek devon diana diane diego dimitri dmitri dominic donald donna doris dorothy douglas
dylan ebony eddie edgar edith edward elaine eleanor elena eli elias elijah elisa elizabeth ella
ellen ellie emeka emil emily emma emmanuel eric erica erik erin esther ethan eugene eva evan
evelyn fatima felix fernando fiona florence folake frances francesca francis francisco frank
freddie frederick funke gabriel gabriela gary gavin gemma george georgia gerald gina giovanni
giulia gloria grace graham grant greg gregory gwen hailey haley hamza hana hannah harold harry
harvey hassan hazel heather hector heidi helen helena henry hiroshi holly hugo ian ibrahim
ifeoma imani ines ingrid irene iris isaac isabel isabella isabelle ivan jack jackie jackson
jacob jade jake james jamie jan jane janet janice jared jasmine jason javier jay jean jeff
jeffrey jenna jennifer jenny jeremy jerry jesse jessica jesus jill jim jimmy joan joanna
joanne joao joe joel johan john johnny jon jonas jonathan jordan jorge jose joseph josephine
josh joshua joy juan judith judy julia julian julie juliet julio justin kai kamala kara karen
karim karl kate katherine kathleen kathryn kathy katie kayla keith kelly ken kenji kenneth
kevin khalid kim kimberly kirsten kofi kwame kyle lakshmi lara larry laura lauren layla leah
lee leila lena leo leon leonardo liam lily linda lindsay lisa liz logan lola lorenzo louis
louise lucas lucia lucy luis luke luna lydia maeve maggie malik manuel marco marcus margaret
maria mariam marie marina mario marisol mark marta martha martin mary mason mateo matt matteo
matthew maya megan mei melanie melissa mia michael michelle miguel mike mila miles miriam
mohamed mohammed molly monica morgan musa nadia nancy naomi natalia natalie nathan neha neil
nia nicholas nick nicole nikhil nina noah noor nora obinna oliver olivia omar oscar owen pablo
pamela paolo patricia patrick paul paula pedro peggy penelope peter philip phoebe pierre
pooja priya rachel rafael rahul raj rajesh ramon raquel ravi rebecca renee ricardo richard
rick riley rita rob robert roberto robin rodrigo roger roman ronald rosa rose ruby russell
ruth ryan sabrina sadia sakura sally sam samantha samuel sandra sara sarah sasha scott sean
sebastian sergio seth shane shannon sharon shawn sheila shirley simon simone sofia sophia
sophie stacy stella stephanie stephen steve steven sue susan suzanne sven tamara tanya tara
taylor ted teresa terry theo theresa thomas tiffany tim timothy tina tobias todd tom tomas
tomás tommy tony tracy travis trevor tunde tyler uche valentina valeria vanessa vera veronica
victor victoria vikram vincent violet vivian walter wanjiru wayne wei wendy william willow
xavier yasmin yemi yuki yusuf zach zachary zainab zara zoe
""")

#: Short forms that are not prefixes of the full name (prefixes like Mel ~ Melanie are a rule).
NICKNAMES: dict[str, tuple[str, ...]] = {
    "bob": ("robert",), "bobby": ("robert",), "rob": ("robert",), "bill": ("william",),
    "billy": ("william",), "will": ("william",), "liam": ("william",), "liz": ("elizabeth",),
    "beth": ("elizabeth",), "betty": ("elizabeth",), "lizzie": ("elizabeth",),
    "jim": ("james",), "jimmy": ("james",), "jack": ("john",), "johnny": ("john",),
    "ted": ("edward", "theodore"), "ned": ("edward",), "peggy": ("margaret",),
    "maggie": ("margaret",), "meg": ("margaret",), "becky": ("rebecca",), "sally": ("sarah",),
    "molly": ("mary",), "polly": ("mary",), "hank": ("henry",), "chuck": ("charles",),
    "dick": ("richard",), "rick": ("richard",), "sandy": ("sandra",), "sasha": ("alexandra",
    "alexander"), "kate": ("katherine", "catherine", "kathryn"), "katie": ("katherine",
    "catherine", "kathryn"), "tony": ("anthony",), "drew": ("andrew",), "josh": ("joshua",),
    "zach": ("zachary",), "gabe": ("gabriel",), "nate": ("nathan", "nathaniel"),
}

#: Words that open sentences (and headings) capitalised without being names.
COMMON_STARTERS = _tokens("""
A About Above Absolutely Actually After Afterwards Again Ah Aha All Almost Also Although Always
Am An And Another Any Anyone Anything Anyway Anyways Are Around As At Aw Aww Awesome Back Be
Because Been Before Being Below Besides Best Better Between Both Btw But By Can Can't Cannot
Cheers Congrats Congratulations Cool Could Couldn't Currently Dear Definitely Did Didn't Do
Does Doesn't Don't Done Down During Each Earlier Either Else Enjoy Enough Especially Even
Eventually Ever Every Everybody Everyone Everything Exactly Excellent Except Fine Finally
First For Fortunately Free From Funny Glad Go Going Gonna Good Got Great Guess Ha Had Haha
Hahaha Happy Has Hasn't Have Haven't Having He He'd He'll He's Hello Her Here Here's Hers
Hey Hi Him His Honestly Hope Hopefully How However Hmm Huh I I'd I'll I'm I've If Im Imagine
In Indeed Instead Is Isn't It It'd It'll It's Its Just Keep Kind Last Later Lately Least Less
Let Let's Like Literally Lol Look Looking Looks Lots Love Lovely Luckily Made Make Many Maybe
Me Meanwhile Might Mine Mm More Moreover Most Mostly Much Must My Myself Naturally Near Nearly
Neither Never Nevertheless Next Nice No Nobody None Nope Nor Not Nothing Now Obviously Of Off
Oh Ok Okay Omg On Once One Only Oops Or Other Others Otherwise Our Ours Out Over Overall Perhaps
Personally Please Plus Possibly Pretty Probably Quite Rather Re Really Recently Regardless
Remember Right Same Seems See Seriously Several Shall She She'd She'll She's Should Shouldn't
Similarly Since Sincerely So Some Somebody Someone Something Sometimes Somewhere Soon Sorry
Sounds Still Such Super Sure Surely Take Than Thank Thanks That That's The Their Theirs Them
Then There There's These They They'd They'll They're They've Thing Things This Those Though
Through Thus Till To Today Together Tomorrow Tonight Too Totally Truly Try Ugh Um Unfortunately
Unless Until Up Upon Us Usually Very Via Wait Was Wasn't We We'd We'll We're We've Well Went
Were Weren't What What's Whatever When Whenever Where Wherever Whether Which While Who Who's
Whoa Whole Whom Whose Why Will With Within Without Won't Wonderful Would Wouldn't Wow Ya Yay
Yeah Yep Yes Yesterday Yet You You'd You'll You're You've Your Yours Yourself Yup
Note Notes Update Edit Todo Idea Ideas Tip Reminder Summary Question Answer Example Warning
Step Steps
Met Saw Took Sent Paid Bought Found Came Gave Told Called Asked
Add Ask Avoid Book Bring Buy Call Cancel Check Close Come Consider Email Find Fix Follow Get
Give Help Hold Install Keep Leave Let Meet Move Open Pick Ping Put Read Remind Review Run Say
Schedule Send Set Show Start Stop Tell Text Turn Use Visit Wait Watch Write
""")

#: All-capital words that are common nouns, units or chat slang, not names.
ACRONYMS = _tokens("""
AI AM API APIS ASAP BSC BTW CD CEO CFO CI CLI COO CPU CSS CSV CTO DB DIY DM DNS DOB ETA EUR FAQ
FYI GB GBP GMT GPU HQ HR HTML HTTP HTTPS ID IDE IMO IDK IRL JSON KB KM KPI LLM LOL MB MBA MSC
ML MPH NAS OK OMG OS PDF PHD PM PR PRS PS PST EST CET CEST WAT UTC EDT PDT QA RAM RSVP SDK SLA
SLO SMS SQL SSD SSH SSL TB TBH TLS TV UI URL USB USD UX VLAN VPN WFH WIFI XML YAML
""")

#: Honorifics before a surname: what follows is a person.
PERSON_TITLES = _words("mr mr. mrs mrs. ms ms. miss dr dr. prof prof. professor sir madam "
                       "aunt uncle grandma grandpa")

#: Family and social relations: "X's sister Y" gives (x, sister, y).
RELATION_NOUNS: dict[str, str] = {word: word for word in _words("""
sister brother mother father son daughter husband wife partner boyfriend girlfriend fiance
fiancee friend colleague coworker boss manager cousin aunt uncle grandmother grandfather niece
nephew roommate neighbor mentor supervisor teammate classmate stepmother stepfather stepson
stepdaughter grandson granddaughter
""")}
RELATION_NOUNS.update({"mom": "mother", "mum": "mother", "mommy": "mother", "dad": "father",
                       "daddy": "father", "grandma": "grandmother", "granny": "grandmother",
                       "grandpa": "grandfather", "bf": "boyfriend", "gf": "girlfriend",
                       "fiancé": "fiance", "fiancée": "fiancee", "co-worker": "coworker",
                       "neighbour": "neighbor", "bestie": "friend", "buddy": "friend",
                       "hubby": "husband", "spouse": "spouse", "sis": "sister", "bro": "brother"})

#: Animals kept as pets: "X's cat Biscuit" gives (x, has_pet, biscuit).
PET_NOUNS = _words("dog cat puppy kitten pet horse parrot hamster rabbit bunny turtle "
                   "tortoise guinea-pig")

#: Role words that mean studying rather than working at a place ("a student at X").
ROLE_STUDY_WORDS = _words("student candidate phd undergraduate undergrad postgrad graduate "
                          "freshman sophomore junior senior pupil researcher postdoc fellow")

#: Nouns naming an occasion that happens at a time.
EVENT_NOUNS = _words("""
wedding conference concert festival graduation funeral reunion hackathon workshop marathon
parade ceremony retreat recital gala fundraiser tournament exhibition meetup party trip vacation
honeymoon shower interview summit convention expo race premiere anniversary birthday camp
seminar webinar
""")

#: Event nouns that are common words on their own: an event only with a modifier.
EVENT_NEEDS_MODIFIER = _words("shower camp race")

#: Words that, before an event noun, belong to its name ("birthday party", "charity race").
EVENT_MODIFIERS = _words("""
birthday baby bridal pride charity camping road family school office holiday christmas
halloween dinner pool surprise engagement graduation bachelor bachelorette music film art
food beer wine tech science book job farewell welcome housewarming retirement dance summer
winter spring beach ski fishing hiking business work team
""")

#: Holidays with a fixed or computable date (month, day); Thanksgiving is computed.
HOLIDAYS: dict[str, tuple[int, int]] = {
    "christmas eve": (12, 24), "christmas day": (12, 25), "christmas": (12, 25),
    "new year's eve": (12, 31), "new years eve": (12, 31), "new year's day": (1, 1),
    "new years day": (1, 1), "halloween": (10, 31), "valentine's day": (2, 14),
    "valentines day": (2, 14), "independence day": (7, 4), "boxing day": (12, 26),
    "thanksgiving": (11, 0),
}

#: Last words that make a capitalised span an organisation.
ORG_SUFFIXES = _words("""
inc inc. ltd ltd. llc llp corp corp. corporation company co co. gmbh ag plc bank university
college school institute hospital clinic foundation association agency group labs laboratory
laboratories studio studios society club council church museum library center centre academy
ministry department committee union party airlines airways motors systems technologies
partners capital ventures bakery cafe café restaurant hotel records press times post
""")

#: Last words that make a capitalised span of two words or more a place ("Kruger Park").
PLACE_SUFFIXES = _words("""
park lake mountain mountains mount river island islands beach bay valley street avenue road
square canyon falls forest hills coast peninsula desert harbour harbor
""")

#: First words that make a capitalised span an organisation ("University of Lagos").
ORG_PREFIXES = _words("university bank ministry department institute college school museum "
                      "church academy")

#: English function words: they end a noun phrase and never name a product.
FUNCTION_WORDS = _words("""
a about above after again against all also am an and any are as at be because been before
being below between both but by can could did do does doing down during each either else
ever every few for from further had has have having he her here hers herself him himself his
how i if in into is it its itself just me more most my myself no nor not now of off on once
only or other our ours ourselves out over own same she should so some such than that the
their theirs them themselves then there these they this those through to too under until up
upon us very was we were what when where which while who whom why will with would you your
yours yourself yourselves really still even much many lot lots than while whether via per
without within among across behind beyond near toward towards despite except including
""")

#: Nouns that take a number without naming a product ("chapter 3", "bed 18", "version 2").
COUNTER_NOUNS = _words("""
chapter section page room bed day week year month level step part episode season grade number
no version line table figure fig floor gate platform track item question lesson unit round
stage phase class age size team group row column slide task issue pr run test model top
under over about around only just than up to from by at in on of for with and or is was are
were be rmse score limit minute minutes hour hours mile miles km times place rank total count
exit route highway bus flight apartment apt suite building house street avenue
""")
