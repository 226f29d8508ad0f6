"""A small gazetteer: countries, US states, major cities and regions, well-known organisations and
products, and the aliases that name the same place ("NYC" = "New York"). Data only, no logic."""

from __future__ import annotations

__all__ = ["ALIASES", "KNOWN_ORGS", "KNOWN_PRODUCTS", "PLACES"]


def _names(text: str) -> frozenset[str]:
    return frozenset(" ".join(n.split()).lower() for n in text.split("|") if n.strip())


_COUNTRIES = """
Afghanistan|Albania|Algeria|Andorra|Angola|Argentina|Armenia|Australia|Austria|Azerbaijan|
Bahamas|Bahrain|Bangladesh|Barbados|Belarus|Belgium|Belize|Benin|Bhutan|Bolivia|Bosnia|
Botswana|Brazil|Brunei|Bulgaria|Burkina Faso|Burundi|Cambodia|Cameroon|Canada|Cape Verde|
Chad|Chile|China|Colombia|Comoros|Congo|Costa Rica|Croatia|Cuba|Cyprus|Czech Republic|Czechia|
Denmark|Djibouti|Dominica|Dominican Republic|Ecuador|Egypt|El Salvador|England|Eritrea|
Estonia|Eswatini|Ethiopia|Fiji|Finland|France|Gabon|Gambia|Georgia|Germany|Ghana|Greece|
Grenada|Guatemala|Guinea|Guyana|Haiti|Honduras|Hungary|Iceland|India|Indonesia|Iran|Iraq|
Ireland|Israel|Italy|Ivory Coast|Jamaica|Japan|Jordan|Kazakhstan|Kenya|Kosovo|Kuwait|
Kyrgyzstan|Laos|Latvia|Lebanon|Lesotho|Liberia|Libya|Liechtenstein|Lithuania|Luxembourg|
Madagascar|Malawi|Malaysia|Maldives|Mali|Malta|Mauritania|Mauritius|Mexico|Moldova|Monaco|
Mongolia|Montenegro|Morocco|Mozambique|Myanmar|Namibia|Nepal|Netherlands|New Zealand|
Nicaragua|Niger|Nigeria|North Korea|North Macedonia|Northern Ireland|Norway|Oman|Pakistan|
Palestine|Panama|Papua New Guinea|Paraguay|Peru|Philippines|Poland|Portugal|Puerto Rico|Qatar|
Romania|Russia|Rwanda|Samoa|San Marino|Saudi Arabia|Scotland|Senegal|Serbia|Seychelles|
Sierra Leone|Singapore|Slovakia|Slovenia|Somalia|South Africa|South Korea|South Sudan|Spain|
Sri Lanka|Sudan|Suriname|Sweden|Switzerland|Syria|Taiwan|Tajikistan|Tanzania|Thailand|Togo|
Tonga|Trinidad and Tobago|Tunisia|Turkey|Turkmenistan|Uganda|Ukraine|United Arab Emirates|
United Kingdom|United States|Uruguay|Uzbekistan|Vanuatu|Vatican City|Venezuela|Vietnam|Wales|
Yemen|Zambia|Zimbabwe|Greenland|Hong Kong|Macau|Tibet|Bermuda|Hawaii
"""

_US_STATES = """
Alabama|Alaska|Arizona|Arkansas|California|Colorado|Connecticut|Delaware|Florida|Idaho|
Illinois|Indiana|Iowa|Kansas|Kentucky|Louisiana|Maine|Maryland|Massachusetts|Michigan|
Minnesota|Mississippi|Missouri|Montana|Nebraska|Nevada|New Hampshire|New Jersey|New Mexico|
New York|North Carolina|North Dakota|Ohio|Oklahoma|Oregon|Pennsylvania|Rhode Island|
South Carolina|South Dakota|Tennessee|Texas|Utah|Vermont|Virginia|Washington|West Virginia|
Wisconsin|Wyoming
"""

_CITIES = """
Abuja|Accra|Addis Ababa|Adelaide|Ahmedabad|Algiers|Almaty|Amsterdam|Ankara|Antwerp|Athens|
Atlanta|Auckland|Austin|Baghdad|Baltimore|Bangalore|Bengaluru|Bangkok|Barcelona|Basel|Beijing|
Beirut|Belfast|Belgrade|Berlin|Bern|Birmingham|Bogota|Bologna|Bombay|Bordeaux|Boston|
Bratislava|Brighton|Brisbane|Bristol|Brooklyn|Brussels|Bucharest|Budapest|Buenos Aires|Cairo|
Calgary|Cambridge|Canberra|Cape Town|Caracas|Cardiff|Casablanca|Charlotte|Chennai|Chicago|
Cleveland|Cologne|Copenhagen|Cork|Dakar|Dallas|Damascus|Dar es Salaam|Delhi|New Delhi|Denver|
Detroit|Dhaka|Doha|Dubai|Dublin|Durban|Dusseldorf|Edinburgh|Florence|Frankfurt|Geneva|Genoa|
Glasgow|Gothenburg|Guadalajara|Guangzhou|Hamburg|Hanoi|Havana|Helsinki|Hiroshima|Ho Chi Minh City|
Honolulu|Houston|Ibadan|Indianapolis|Islamabad|Istanbul|Jakarta|Jerusalem|Johannesburg|Kampala|
Kano|Karachi|Kathmandu|Khartoum|Kigali|Kinshasa|Kolkata|Krakow|Kuala Lumpur|Kyiv|Kyoto|Lagos|
Lahore|Las Vegas|Leeds|Leipzig|Lima|Lisbon|Liverpool|Ljubljana|London|Los Angeles|Luanda|Lusaka|
Lyon|Madrid|Malaga|Manchester|Manhattan|Manila|Marrakech|Marseille|Medellin|Melbourne|
Mexico City|Miami|Milan|Minneapolis|Mombasa|Montevideo|Montreal|Moscow|Mumbai|Munich|Nairobi|
Nantes|Naples|Nashville|New Orleans|New York City|Nice|Osaka|Oslo|Ottawa|Oxford|Palermo|
Paris|Perth|Philadelphia|Phoenix|Pittsburgh|Port Harcourt|Portland|Porto|Prague|Pretoria|
Quebec|Quito|Rabat|Reykjavik|Riga|Rio de Janeiro|Riyadh|Rome|Rotterdam|Salt Lake City|
San Antonio|San Diego|San Francisco|San Jose|Santiago|Sao Paulo|São Paulo|Sarajevo|Seattle|
Seoul|Seville|Shanghai|Shenzhen|Singapore|Sofia|Stockholm|Stuttgart|Sydney|Taipei|Tallinn|
Tampa|Tbilisi|Tehran|Tel Aviv|Tokyo|Toronto|Toulouse|Tunis|Turin|Valencia|Vancouver|Venice|
Vienna|Vilnius|Warsaw|Wellington|Yokohama|Zagreb|Zanzibar|Zurich|Kumasi|Enugu|Abeokuta|
Harare|Windhoek|Gaborone|Maputo|Antananarivo|Beijing|Chengdu|Hangzhou|Sapporo|Busan|Pune|
Hyderabad|Jaipur|Goa|Kochi|Colombo|Yangon|Phnom Penh|Bali|Cusco|Oaxaca|Cancun|Tijuana|
Montego Bay|Kingston|San Juan|Anchorage|Sacramento|Oakland|Boulder|Orlando|Savannah|
Charleston|Richmond|Raleigh|Memphis|Milwaukee|Kansas City|St. Louis|Saint Louis|Cincinnati|
Columbus|Buffalo|Albany|Hartford|Providence|Newark|Jersey City|Santa Fe|Tucson|Albuquerque|
El Paso|Fort Worth|Spokane|Tacoma|Eugene|Berkeley|Palo Alto|Santa Monica|Hollywood|
Aberdeen|Bath|Nottingham|Sheffield|Newcastle|York|Galway|Limerick|Bergen|Aarhus|Malmo|
Uppsala|Tampere|Gdansk|Wroclaw|Brno|Salzburg|Innsbruck|Graz|Lausanne|Lucerne|Strasbourg|
Lille|Bilbao|Granada|Cordoba|Ibiza|Mallorca|Madeira|Thessaloniki|Santorini|
Crete|Dubrovnik|Split|Antalya|Izmir|Haifa|Amman|Muscat|Abu Dhabi|Jeddah|Mecca|Medina
"""

_REGIONS = """
Africa|West Africa|East Africa|North Africa|Southern Africa|South Africa|Sub-Saharan Africa|
Europe|Western Europe|Eastern Europe|Northern Europe|Southern Europe|Scandinavia|Balkans|
Asia|East Asia|South Asia|Southeast Asia|Central Asia|Middle East|North America|
South America|Latin America|Central America|Caribbean|Oceania|Antarctica|Arctic|
Mediterranean|Pacific Northwest|Midwest|New England|Silicon Valley|Bay Area|the Alps|Alps|
Sahara|Amazon rainforest|Patagonia|Lake District|Highlands|Yosemite|Grand Canyon|
Yellowstone|Mount Everest|Kilimanjaro|Cotswolds|Tuscany|Provence|Bavaria|Catalonia|Andalusia|
Lapland|Siberia|Ontario|British Columbia|Alberta|Quebec|Queensland|Victoria|Tasmania|
Normandy|Brittany|Sicily|Sardinia|Corsica
"""

#: Place names (normalized: lowercase, single spaces).
PLACES = _names(_COUNTRIES) | _names(_US_STATES) | _names(_CITIES) | _names(_REGIONS)

#: Alternative names -> the canonical name of the same place (all normalized).
ALIASES: dict[str, str] = {
    "us": "united states", "u.s": "united states", "u.s.": "united states",
    "usa": "united states", "u.s.a": "united states", "u.s.a.": "united states",
    "america": "united states", "united states of america": "united states",
    "the states": "united states", "states": "united states",
    "uk": "united kingdom", "u.k": "united kingdom", "u.k.": "united kingdom",
    "britain": "united kingdom", "great britain": "united kingdom",
    "nyc": "new york", "new york city": "new york", "big apple": "new york",
    "la": "los angeles", "l.a.": "los angeles", "sf": "san francisco",
    "san fran": "san francisco", "dc": "washington, d.c.", "d.c.": "washington, d.c.",
    "washington dc": "washington, d.c.", "philly": "philadelphia", "vegas": "las vegas",
    "nola": "new orleans", "uae": "united arab emirates", "holland": "netherlands",
    "the netherlands": "netherlands", "rio": "rio de janeiro", "cdmx": "mexico city",
    "bombay": "mumbai", "peking": "beijing", "saigon": "ho chi minh city",
    "bengaluru": "bangalore", "são paulo": "sao paulo", "saint louis": "st. louis",
    "czechia": "czech republic", "ivory coast": "côte d'ivoire", "kiev": "kyiv",
    "mit": "massachusetts institute of technology", "nasa": "nasa", "un": "united nations",
    "ucla": "university of california, los angeles", "nyu": "new york university",
}

#: Well-known companies and institutions (normalized).
KNOWN_ORGS = _names("""
Google|Alphabet|Microsoft|Apple|Amazon|Meta|Netflix|IBM|Intel|Nvidia|AMD|Tesla|SpaceX|OpenAI|
Anthropic|Uber|Lyft|Airbnb|Spotify|Samsung|Sony|Toyota|Honda|BMW|Volkswagen|Ford|Nike|Adidas|
Starbucks|Walmart|Target|Costco|IKEA|NASA|United Nations|UNICEF|WHO|Red Cross|BBC|CNN|
New York Times|GitHub|GitLab|Mozilla|Stripe|Shopify|Salesforce|Oracle|Cloudflare|
DigitalOcean|Atlassian|Adobe|Dropbox|Twitter|Pinterest|Reddit|LinkedIn|Deloitte|McKinsey|
Accenture|Goldman Sachs|JPMorgan|Morgan Stanley|Barclays|HSBC|Citibank|PayPal|Visa|Mastercard|
Boeing|Airbus|Pfizer|Moderna|Unilever|Nestle|Coca-Cola|Pepsi|McDonald's|Disney|Pixar|
Marvel|Warner Bros|Universal|Paramount|Harvard|Stanford|Yale|Princeton|Oxford University|
Cambridge University|MIT|Caltech|Berkeley|Greenpeace|Amnesty International|Peace Corps|
World Bank|IMF|European Union|NHS|FBI|CIA|Interpol|Siemens|Philips|Ericsson|Nokia|Huawei|
Xiaomi|Alibaba|Tencent|Baidu|Jumia|Flutterwave|Paystack|Safaricom|MTN|Andela|Zara|H&M|Lidl|
Aldi|Tesco|Whole Foods|Trader Joe's|Etsy|eBay|Wikipedia|Hugging Face|DeepMind
""")

#: Well-known products, software, devices and services (normalized).
KNOWN_PRODUCTS = _names("""
Python|JavaScript|TypeScript|Rust|Java|Kotlin|Swift|Ruby|PHP|Perl|Haskell|Scala|Elixir|
Erlang|Clojure|Julia|MATLAB|Fortran|COBOL|Dart|Lua|Zig|C++|C#|Go|Golang|
PostgreSQL|Postgres|MySQL|MariaDB|SQLite|MongoDB|Redis|Cassandra|Elasticsearch|Kafka|
RabbitMQ|DynamoDB|Snowflake|BigQuery|Docker|Kubernetes|Terraform|Ansible|Jenkins|Nginx|
Linux|Ubuntu|Debian|Fedora|Arch Linux|CentOS|Windows|macOS|iOS|Android|ChromeOS|
iPhone|iPad|MacBook|iMac|Apple Watch|AirPods|ThinkPad|Pixel|Galaxy|Kindle|PlayStation|
Xbox|Nintendo Switch|GoPro|Roomba|Fitbit|Garmin|Peloton|Tesla Model 3|Model 3|Model Y|
Prius|Excel|PowerPoint|Outlook|Gmail|Slack|Zoom|Microsoft Teams|Notion|Figma|Trello|Jira|
Confluence|VS Code|Visual Studio|Vim|Neovim|Emacs|IntelliJ|PyCharm|Xcode|React|Vue|Angular|
Svelte|Django|Flask|FastAPI|Rails|Node.js|Deno|Laravel|TensorFlow|PyTorch|
Pandas|NumPy|Jupyter|Git|Photoshop|Lightroom|Illustrator|Premiere|Final Cut|Blender|Unity|
Unreal Engine|Minecraft|Fortnite|Zelda|Pokemon|Mario|Instagram|TikTok|WhatsApp|Facebook|Snapchat|
YouTube|Twitch|Discord|Telegram|Signal|WeChat|Duolingo|Strava|Tinder|Bumble|Uber Eats|
DoorDash|Venmo|ChatGPT|Copilot|Siri|Alexa|Chrome|Firefox|Safari|
Spotify Premium|Netflix|Hulu|Disney+|Prime Video|Kindle Unlimited|Audible|Grafana|Prometheus|
AWS|Azure|GCP|Heroku|Vercel|Netlify|Raspberry Pi|Arduino|Obsidian|Evernote|Dropbox|
Google Drive|Google Docs|Google Maps|Google Sheets|Canva|Substack|WordPress|Squarespace|
Shopify|Airtable|Asana|Todoist|Calendly|Lego|Nespresso|Vitamix|Instant Pot|Kindle Paperwhite
""")
