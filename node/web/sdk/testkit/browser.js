// testkit/browser.js: headless Chromium (Debian's /usr/bin/chromium, or $CHROMIUM) through
// playwright-core for the browser suites, and the helpers those suites share: a player page
// (its own browser context: its own localStorage, so its own key), waiting on page text, and the
// folder screenshots go to (node/web/test-output/screenshots, or $GAMECHAIN_SCREENSHOTS).
// $GAMECHAIN_SDK_BUNDLE (a file, e.g. dist/gamechain.js of `npm run build`) is served to the pages
// as /sdk/gamechain.js instead of the bundle embedded in the binary, and $GAMECHAIN_SITE_DIR (e.g.
// ../site) serves that folder's pages instead of the embedded ones: the SDK's and the pages'
// current sources without rebuilding the node.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

const here = path.dirname(fileURLToPath(import.meta.url));
export const SCREENSHOTS = path.resolve(process.env.GAMECHAIN_SCREENSHOTS ?? path.join(here, '../../test-output/screenshots'));

export async function launch() {
  const executablePath = process.env.CHROMIUM ?? '/usr/bin/chromium';
  if (!fs.existsSync(executablePath)) {
    throw new Error(`no Chromium at ${executablePath}: install it (Debian: apt-get install -y chromium) or set CHROMIUM`);
  }
  const args = ['--no-sandbox', '--disable-background-networking', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'];
  // A page fulfilled by a route (GAMECHAIN_SITE_DIR) has no address space of its own: Chromium's
  // local network access checks would refuse its WebSockets to 127.0.0.1.
  if (process.env.GAMECHAIN_SITE_DIR) args.push('--disable-features=LocalNetworkAccessChecks');
  return chromium.launch({ executablePath, args });
}

/** The content security policy the node gives every page (node/src/server/web.rs). */
const CSP = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; worker-src 'self' blob:; connect-src 'self' ws: wss:; img-src 'self' data:; object-src 'none'; base-uri 'none'; frame-ancestors 'none'";
const TYPES = { '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.css': 'text/css; charset=utf-8' };

/**
 * Serves $GAMECHAIN_SDK_BUNDLE, when set, as every page's /sdk/gamechain.js in `context`; and,
 * with $GAMECHAIN_SITE_DIR (e.g. node/web/site), the pages of that folder instead of those the
 * binary embeds (with the node's content security policy): this checkout's pages without
 * rebuilding the node.
 */
export async function routeBundle(context) {
  const file = process.env.GAMECHAIN_SDK_BUNDLE;
  if (file) {
    const body = fs.readFileSync(file);
    await context.route('**/sdk/gamechain.js', (route) => route.fulfill({ status: 200, headers: { 'content-type': 'text/javascript; charset=utf-8', 'cache-control': 'no-cache' }, body }));
  }
  const site = process.env.GAMECHAIN_SITE_DIR;
  if (site) {
    const root = path.resolve(site);
    await context.route((url) => !url.pathname.startsWith('/v1/') && !url.pathname.startsWith('/sdk/gamechain.js') && !url.pathname.startsWith('/clients/'), (route) => {
      const { pathname } = new URL(route.request().url());
      const rel = pathname.endsWith('/') ? `${pathname}index.html` : pathname;
      const full = path.join(root, rel);
      if (!full.startsWith(root) || !fs.existsSync(full) || !fs.statSync(full).isFile()) return route.fallback();
      return route.fulfill({ status: 200, headers: { 'content-type': TYPES[path.extname(full)] ?? 'application/octet-stream', 'cache-control': 'no-cache', 'content-security-policy': CSP }, body: fs.readFileSync(full) });
    });
  }
}

/**
 * A player: a new context and page at `url`, ready (the SDK loaded, the first redraw asked).
 * `setup(page)` runs before the page loads (routes that must patch the page, e.g. WebSockets).
 */
export async function player(browser, url, name, { setup } = {}) {
  const context = await browser.newContext({ viewport: { width: 1000, height: 1100 } });
  await routeBundle(context);
  const page = await context.newPage();
  if (setup) await setup(page);
  const errors = [];
  page.on('pageerror', (e) => errors.push(`${name}: ${e.message}`));
  await page.goto(url);
  await page.waitForSelector('body[data-ready="1"], #fatal:not([hidden])', { timeout: 30000 });
  if (await page.isVisible('#fatal')) throw new Error(`${url}: ${await page.textContent('#fatal')}`);
  // A marker that a reload would wipe: redraws must come from the WebSocket, not reloads.
  await page.evaluate(() => { window.__noReload = true; });
  const address = (await page.$('#address')) ? await page.textContent('#address') : null;
  return { name, page, context, errors, address };
}

/** Waits until the element's text contains `text` (or matches a RegExp). */
export async function waitText(page, selector, text, timeout = 30000) {
  const re = text instanceof RegExp ? text.source : text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const flags = text instanceof RegExp ? text.flags : '';
  try {
    await page.waitForFunction(([sel, src, fl]) => {
      const el = document.querySelector(sel);
      return el && new RegExp(src, fl).test(el.textContent);
    }, [selector, re, flags], { timeout, polling: 50 });
  } catch (e) {
    const got = await page.textContent(selector).catch(() => '(none)');
    const err = await page.textContent('#error').catch(() => '');
    const more = await page.evaluate(() => ['#info', '#turn', '#board'].map((s) => `${s}: ${document.querySelector(s)?.textContent ?? ''}`).join('; ') + ` hash ${location.hash}` + (window.__trace ? `; trace: ${window.__trace.join(' | ')}` : '')).catch(() => '');
    throw new Error(`${selector} never showed ${text} (shows ${JSON.stringify(got)}; error ${JSON.stringify(err)}; ${more}): ${e.message}`);
  }
}

/** Waits until the page has no action in flight. */
export async function idle(page) {
  await page.waitForFunction(() => !document.body.dataset.busy, null, { timeout: 60000, polling: 50 });
}

/** Clicks and waits for the action it starts to finish (receipt or refusal). */
export async function act(p, selector) {
  await idle(p.page);
  await p.page.click(selector);
  await p.page.waitForFunction(() => !document.body.dataset.busy, null, { timeout: 90000, polling: 50 });
}

export async function shot(page, name) {
  fs.mkdirSync(SCREENSHOTS, { recursive: true });
  const file = path.join(SCREENSHOTS, name);
  await page.screenshot({ path: file, fullPage: true });
  console.log(`screenshot: ${file}`);
  return file;
}
