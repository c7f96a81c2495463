import { Chain, Key } from './src/index.js';
const chain = new Chain('http://127.0.0.1:18645');
const x = Key.generate(), o = Key.generate();
for (const k of [x, o]) await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }), { timeoutMs: 30000 });
const play = async (k, op) => { const r = await chain.waitForReceipt(await chain.send(k, { type: 'game', game: 'dice', op }), { timeoutMs: 30000 }); if (!r.ok) throw new Error(r.error); return r; };
const a = (await play(x, { kind: 'create', stake: '100' })).events[0].data.id;
const j = await play(o, { kind: 'join', id: a });
const t0 = Date.now();
const c = await play(x, { kind: 'create', stake: '5' });
console.log('join', j.height, 'create', c.height, Date.now() - t0);
for (let h = 1; h <= c.height; h++) { const b = await chain.block(h); console.log(h, b.header.time_ms, b.txs.length, (b.scheduled ?? []).length); }
