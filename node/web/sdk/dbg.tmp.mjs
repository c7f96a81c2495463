import { startNode } from './testkit/node.js';
import { launch, player, act, waitText } from './testkit/browser.js';
const browser = await launch();
const node = await startNode({ blockIntervalMs: 1000 });
try {
  const url = `${node.url}/play/dice/`;
  const alice = await player(browser, url, 'alice');
  const bob = await player(browser, url, 'bob');
  for (const p of [alice, bob]) { p.page.on('console', (m) => console.log(p.name, m.text())); }
  await act(alice, '#faucet');
  await waitText(alice.page, '#balance', '1000.00');
  await alice.page.fill('#stake', '2.5');
  await act(alice, '#create-btn');
  console.log('alice error', await alice.page.textContent('#error'), await alice.page.textContent('#info'));
  await new Promise((r) => setTimeout(r, 3000));
  console.log('bob lobby', await bob.page.textContent('#lobby'), 'live', await bob.page.textContent('#live'), 'err', await bob.page.textContent('#error'));
  console.log('alice lobby', await alice.page.textContent('#lobby'), await alice.page.textContent('#mine'));
  console.log(await (await fetch(`${node.url}/v1/games/dice?open=1`)).text());
  console.log(alice.errors, bob.errors);
} finally { await browser.close(); await node.dispose(); }
