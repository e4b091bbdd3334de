/**
 * Generators for the two string fields of POST /run that name something outside the request:
 * `route` (a configured key, compared exactly) and `callback_url` (a URL the hub will call). Each
 * callback_url is put together from parts whose fate is written down here from docs/api.md and
 * docs/security.md, not taken from the implementation: "ok" (accepted when the client has a
 * signing secret), "refused" (400 callback_url_refused: userinfo, loopback, private, metadata) or
 * "invalid" (400 invalid_request naming /callback_url). A URL's fate is the worst of its parts'.
 */
import fc from "fast-check";

export type CallbackFate = "ok" | "refused" | "invalid";

const SCHEMES: Readonly<Record<string, CallbackFate>> = {
  "https://": "ok",
  "http://": "ok",
  "HtTpS://": "ok",
  "ftp://": "invalid",
  "ws://": "invalid",
  "wss://": "invalid",
  "gopher://": "invalid",
  "javascript://": "invalid",
  "file://": "invalid",
};

/** Userinfo: any user name or password is refused; an empty one (`@`, `:@`) is no userinfo. */
const USERINFO: Readonly<Record<string, CallbackFate>> = {
  "": "ok",
  "@": "ok",
  ":@": "ok",
  "user@": "refused",
  "user:pw@": "refused",
  ":pw@": "refused",
  "%40@": "refused",
  "\u00fcser@": "refused",
};

const HOSTS: Readonly<Record<string, CallbackFate>> = {
  "hooks.example.com": "ok",
  "HOOKS.EXAMPLE.COM": "ok",
  "hooks.example.com.": "ok", // the root label, written out
  "b\u00fccher.example": "ok", // an internationalised name (sent as punycode)
  "xn--bcher-kva.example": "ok", // the same name in punycode
  "caf\u00e9.example": "ok", // NFC
  "cafe\u0301.example": "ok", // NFD: IDNA normalises it to the NFC name
  "\u4f8b\u3048.\u30c6\u30b9\u30c8": "ok", // Japanese labels
  "\u0645\u062b\u0627\u0644.\u0625\u062e\u062a\u0628\u0627\u0631": "ok", // right-to-left labels
  "exa\u200bmple.com": "ok", // IDNA maps zero-width space to nothing
  "\uff45\uff58\uff41\uff4d\uff50\uff4c\uff45.com": "ok", // fullwidth letters map to ASCII
  "hooks%2eexample.com": "ok", // percent-decoded before IDNA
  [`${"a".repeat(63)}.example.com`]: "ok",
  "1.1.1.1": "ok",
  "[2606:4700:4700::1111]": "ok",
  "[2001:4860:4860::8888]": "ok",
  localhost: "refused",
  "LOCALHOST.": "refused",
  "api.localhost": "refused",
  "\uff4c\uff4f\uff43\uff41\uff4c\uff48\uff4f\uff53\uff54": "refused", // fullwidth "localhost"
  "local%68ost": "refused",
  "127.0.0.1": "refused",
  "\u2460\u2461\u2466.0.0.1": "refused", // circled digits map to 127.0.0.1
  "127\u30020\u30020\u30021": "refused", // ideographic full stops
  "0x7f.1": "refused",
  "2130706433": "refused",
  "0177.0.0.1": "refused",
  "%31%32%37.0.0.1": "refused",
  "0": "refused",
  "10.0.0.1": "refused",
  "169.254.169.254": "refused",
  "metadata.google.internal": "refused",
  "[::1]": "refused",
  "[::]": "refused",
  "[::ffff:127.0.0.1]": "refused",
  "[fe80::1]": "refused",
  "[fd00:ec2::254]": "refused",
  "[64:ff9b::a00:1]": "refused", // NAT64 of 10.0.0.1
  "[2002:7f00:1::]": "refused", // 6to4 of 127.0.0.1
  "[fe80::1%25eth0]": "invalid", // zone ids have no place in a URL (WHATWG)
  "[fe80::1%eth0]": "invalid",
  "[2606:4700::1%251]": "invalid",
  "[::1": "invalid",
  "[1:2:3]": "invalid",
  "\u202eexample.com": "invalid", // a bidi override is no hostname character
  "\u2066example\u2069.com": "invalid",
  "a\u05d0.com": "invalid", // mixes directions in one label (IDNA bidi rule)
  "xn--zz.example": "invalid", // not punycode
  "hooks .example.com": "invalid",
  "hooks\u00a0.example.com": "invalid",
  "exa%00mple.com": "invalid",
  "999.1.1.1": "invalid",
  "1.2.3.4.5": "invalid",
};

const PORTS: Readonly<Record<string, CallbackFate>> = {
  "": "ok",
  ":": "ok",
  ":443": "ok",
  ":8443": "ok",
  ":65535": "ok",
  ":00080": "ok",
  ":0": "invalid", // never answers
  ":00000": "invalid",
  ":65536": "invalid",
  ":-1": "invalid",
  ":8o": "invalid",
  ":\u0661\u0662\u0663": "invalid", // Arabic-Indic digits
  ":99999999999": "invalid",
};

/** Path, query and fragment. */
const PATHS: Readonly<Record<string, CallbackFate>> = {
  "": "ok",
  "/": "ok",
  "/cb?x=1&y=%20#frag": "ok",
  "/%zz/%": "ok",
  "/%2e%2e/%2e%2e/etc/passwd": "ok",
  "/@127.0.0.1/": "ok",
  "\\@127.0.0.1/": "ok", // a backslash is a slash in http(s) URLs: this is the path
  "/\u202eevil\u202c/\u2066x\u2069": "ok", // bidi controls are percent-encoded
  "/caf\u00e9/cafe\u0301": "ok",
  "/\u200b\ufeff\u00a0?q=\u2028#\u0085": "ok",
  "/\ud83d\ude00": "ok",
  "/a b": "invalid",
  "/x\ty": "invalid",
  "/x\ny": "invalid",
  "/x\u0000": "invalid",
  "/\u007f": "invalid",
  "/\ud800": "invalid", // unpaired surrogate
  "?q=\udc00": "invalid",
};

/** Around the URL: whitespace a parser would strip (refused) and characters it would not. */
type Wrap = readonly [string, string, CallbackFate];
const NO_WRAP: Wrap = ["", "", "ok"];
const WRAPS: readonly Wrap[] = [
  NO_WRAP,
  ["", "", "ok"],
  [" ", "", "invalid"],
  ["", " ", "invalid"],
  ["\t", "", "invalid"],
  ["", "\r\n", "invalid"],
  ["\u0000", "", "invalid"],
  ["", "\u001f", "invalid"],
  ["\u00a0", "", "invalid"], // not a scheme character
  ["\ufeff", "", "invalid"],
  ["\u3000", "", "invalid"],
];

/** Lengths to pad a URL to (UTF-16 code units) around the 2048 limit; undefined: no padding. */
const PAD_TO = [undefined, undefined, undefined, 2047, 2048, 2049, 5000] as const;

const worst = (fates: readonly CallbackFate[]): CallbackFate =>
  fates.includes("invalid") ? "invalid" : fates.includes("refused") ? "refused" : "ok";

/** Fates of the generated callback_url values, by text (the model looks them up here). */
export const GENERATED_CALLBACK_URLS = new Map<string, CallbackFate>();

function remember(url: string, fate: CallbackFate): string {
  const earlier = GENERATED_CALLBACK_URLS.get(url);
  if (earlier !== undefined && earlier !== fate) {
    throw new Error(`parts disagree on ${JSON.stringify(url)}: ${earlier} and ${fate}`);
  }
  GENERATED_CALLBACK_URLS.set(url, fate);
  return url;
}

type Table = Readonly<Record<string, CallbackFate>>;

/** An entry of the table: mostly one whose fate is ok, so the other parts' fates show. */
const part = (table: Table) => {
  const entry = (keys: string[]) =>
    fc.constantFrom(...keys).map((text) => [text, table[text] as CallbackFate] as const);
  const ok = Object.keys(table).filter((k) => table[k] === "ok");
  return fc.oneof({ weight: 3, arbitrary: entry(ok) }, entry(Object.keys(table)));
};

const PARTS = { scheme: SCHEMES, userinfo: USERINFO, host: HOSTS, port: PORTS, path: PATHS };
type PartName = keyof typeof PARTS;
type Parts = Record<PartName, readonly [string, CallbackFate]>;

/** Puts a URL together (padded to `padTo` units when given) and remembers its fate. */
function compose(parts: Parts, wrap: Wrap, pad?: { to: number; char: string }) {
  const { scheme, userinfo, host, port, path } = parts;
  const [before, after, wrapFate] = wrap;
  const head = `${before}${scheme[0]}${userinfo[0]}${host[0]}${port[0]}`;
  const tail = `${path[0]}${after}`;
  const fill = pad ? pad.to - head.length - tail.length - 1 : 0;
  const padding = pad && fill > 0 ? `/${pad.char.repeat(Math.ceil(fill / pad.char.length))}` : "";
  const fate = worst([scheme[1], userinfo[1], host[1], port[1], path[1], wrapFate]);
  return remember(`${head}${padding}${tail}`, fate);
}

export const callbackUrl = fc
  .record({
    scheme: part(SCHEMES),
    userinfo: part(USERINFO),
    host: part(HOSTS),
    port: part(PORTS),
    path: part(PATHS),
    wrap: fc.oneof({ weight: 3, arbitrary: fc.constant(NO_WRAP) }, fc.constantFrom(...WRAPS)),
    padTo: fc.constantFrom(...PAD_TO),
    padChar: fc.constantFrom("a", "\u00e9", "\ud83d\ude00"),
  })
  .map(({ wrap, padTo, padChar, ...parts }) =>
    compose(parts, wrap, padTo === undefined ? undefined : { to: padTo, char: padChar }),
  );

/**
 * Every entry of every table once, in an otherwise plain URL (https://hooks.example.com/cb), and
 * every wrap: so each written-down fate is checked on every run, whatever the generator draws.
 */
export function eachPartOnce(): string[] {
  const plain: Parts = {
    scheme: ["https://", "ok"],
    userinfo: ["", "ok"],
    host: ["hooks.example.com", "ok"],
    port: ["", "ok"],
    path: ["/cb", "ok"],
  };
  const urls: string[] = [];
  for (const [name, table] of Object.entries(PARTS) as [PartName, Table][]) {
    for (const [text, fate] of Object.entries(table)) {
      urls.push(compose({ ...plain, [name]: [text, fate] }, NO_WRAP));
    }
  }
  for (const wrap of WRAPS) urls.push(compose(plain, wrap));
  for (const to of [2047, 2048, 2049]) urls.push(compose(plain, NO_WRAP, { to, char: "a" }));
  return urls;
}

/** Characters around, inside or instead of a route key's parts. */
const ROUTE_AFFIXES = [
  "\u0000",
  "\u0001",
  "\u001f",
  "\u007f",
  "\u0085",
  " ",
  "\t",
  "\r\n",
  "\u00a0",
  "\u3000",
  ">",
  "*",
  ".>",
  ".*",
  ".",
  "..",
  "\uff0e", // fullwidth full stop
  "/",
  "\\",
  "%2e",
  "$",
  "_INBOX.",
  "\u202e",
  "\u2066",
  "\u200f",
  "\u200b",
  "\ufeff",
  "\u0301", // a combining accent: NFD of the previous letter
  "\ud800",
  "\udc00",
  "\ud83d\ude00",
  "\uffff",
];

const ROUTE_BASES = [
  "demo.echo",
  "demo.small",
  "billing.invoice",
  "demo",
  "demo.",
  "",
  "demo.caf\u00e9",
  "demo.cafe\u0301",
];

/**
 * Route keys: configured keys with unusual characters around or inside them, wildcards, and keys
 * around the 128-unit limit. The model answers them: 400 naming /route for empty, too long or
 * unpaired surrogates, otherwise 403 unless the exact key is configured and allowed.
 */
export const unusualRoute = fc.oneof(
  fc
    .tuple(
      fc.constantFrom(...ROUTE_BASES),
      fc.constantFrom(...ROUTE_AFFIXES),
      fc.constantFrom("prefix", "suffix", "dot", "middle"),
    )
    .map(([base, affix, where]) => {
      if (where === "prefix") return `${affix}${base}`;
      if (where === "suffix") return `${base}${affix}`;
      if (where === "dot") return base.replace(".", affix);
      const half = Math.floor(base.length / 2);
      return `${base.slice(0, half)}${affix}${base.slice(half)}`;
    }),
  fc.constantFrom(
    "*",
    ">",
    "demo.*",
    "demo.>",
    "demo.echo.>",
    ".demo.echo",
    "demo..echo",
    "DEMO.ECHO",
    "demo.echo\u0000.small",
    "a".repeat(128),
    "a".repeat(129),
    `demo.${"x".repeat(123)}`,
    "\ud83d\ude00".repeat(64), // 128 units
    "\ud83d\ude00".repeat(65),
    `${"a".repeat(127)}\ud83d\ude00`, // 129 units
    "demo.echo".repeat(1000),
  ),
  fc.string({ unit: "binary", maxLength: 20 }),
  fc.string({ unit: "grapheme", maxLength: 10 }),
);
