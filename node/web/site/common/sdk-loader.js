// sdk-loader.js: loads the SDK bundle the node serves (/sdk/gamechain.js) and the typed clients
// of its modules (/clients/<module>.js, generated at build time by `gamechain module codegen --ts`
// from the schemas of the modules the binary embeds). A binary built without Node.js serves
// modules that throw instead; their text, saying how to get the bundle, is shown.
export function loadSdk() {
  return load('/sdk/gamechain.js');
}

/** The generated typed client of `module` (its op builders, `eventsOf`, views, `<Name>Client`). */
export function loadClient(module) {
  return load(`/clients/${module}.js`);
}

async function load(url) {
  try {
    return await import(url);
  } catch (e) {
    const box = document.getElementById('fatal');
    if (box) {
      box.hidden = false;
      box.textContent = e && e.message ? e.message : String(e);
    }
    throw e;
  }
}

/** Base units (decimal string) as GOLD with 2 decimals: "100050" → "1000.50". */
export function gold(units) {
  const s = String(units ?? '0').padStart(3, '0');
  return `${s.slice(0, -2).replace(/^0+(?=\d)/, '')}.${s.slice(-2)}`;
}

/** GOLD text ("1", "1.5", "1.00") as base units, or throws a message for the player. */
export function toUnits(text) {
  const t = String(text).trim();
  if (t === '') return '0';
  const m = /^(\d{1,16})(?:\.(\d{1,2}))?$/.exec(t);
  if (!m) throw new Error(`"${t}" is not an amount of GOLD with at most 2 decimals`);
  return String(BigInt(m[1]) * 100n + BigInt((m[2] ?? '').padEnd(2, '0')));
}

/** The text of an element by id. */
export const $ = (id) => document.getElementById(id);
