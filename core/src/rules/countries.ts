/**
 * ISO 3166-1 alpha-2 country codes (the 249 officially assigned ones, plus `XK` for Kosovo,
 * which GeoIP data uses). Geolocation constraints are checked against this list so a typo
 * such as `UK` is refused when the rule is saved rather than silently never matching.
 */
const CODES =
  'AD AE AF AG AI AL AM AO AQ AR AS AT AU AW AX AZ BA BB BD BE BF BG BH BI BJ BL BM BN BO BQ BR BS BT BV BW BY BZ ' +
  'CA CC CD CF CG CH CI CK CL CM CN CO CR CU CV CW CX CY CZ DE DJ DK DM DO DZ EC EE EG EH ER ES ET FI FJ FK FM FO FR ' +
  'GA GB GD GE GF GG GH GI GL GM GN GP GQ GR GS GT GU GW GY HK HM HN HR HT HU ID IE IL IM IN IO IQ IR IS IT JE JM JO JP ' +
  'KE KG KH KI KM KN KP KR KW KY KZ LA LB LC LI LK LR LS LT LU LV LY MA MC MD ME MF MG MH MK ML MM MN MO MP MQ MR MS MT ' +
  'MU MV MW MX MY MZ NA NC NE NF NG NI NL NO NP NR NU NZ OM PA PE PF PG PH PK PL PM PN PR PS PT PW PY QA RE RO RS RU RW ' +
  'SA SB SC SD SE SG SH SI SJ SK SL SM SN SO SR SS ST SV SX SY SZ TC TD TF TG TH TJ TK TL TM TN TO TR TT TV TW TZ ' +
  'UA UG UM US UY UZ VA VC VE VG VI VN VU WF WS YE YT ZA ZM ZW XK';

export const COUNTRY_CODES: ReadonlySet<string> = new Set(CODES.split(' '));

/** `us` → `US` when it is an assigned code, else undefined. */
export function countryCode(input: unknown): string | undefined {
  if (typeof input !== 'string' || input.length !== 2) return undefined;
  const code = input.toUpperCase();
  return COUNTRY_CODES.has(code) ? code : undefined;
}

/**
 * `us-ca` → `US-CA`: an assigned country, a hyphen, and a one- to three-character
 * subdivision code (ISO 3166-2 uses letters and digits: `GB-ENG`, `FR-75`, `JP-13`).
 */
export function subdivisionCode(input: unknown): string | undefined {
  if (typeof input !== 'string') return undefined;
  const m = /^([A-Za-z]{2})-([A-Za-z0-9]{1,3})$/.exec(input);
  if (!m || !countryCode(m[1])) return undefined;
  return input.toUpperCase();
}
