// rps.mjs: a whole rock-paper-scissors game off-chain (docs/channels.md) from Node, both players
// in one script (in a real game each runs on their own machine): alice offers (a 5-minute window
// of block time), bob joins, each client listens for the other's moves (the node's move relay
// first, the move board as the fallback) and answers them (bob commits once he has seen alice's
// commit, the reveals go once both commits are in), then alice settles by history, waits one
// window of block time and withdraws. Needs channel, moveboard and rps_rules on the node (the
// default genesis has them). With GAMECHAIN_DEV_CLOCK=1 (a node with `dev_clock = true`) it moves
// the node's clock past the window instead of waiting five minutes.
//   GAMECHAIN_NODE=http://127.0.0.1:8645 node examples/rps.mjs
import { Chain, Key, Channel, Rps } from '@gamechain/sdk';

const url = process.env.GAMECHAIN_NODE ?? 'http://127.0.0.1:8645';
const chain = new Chain(url);
const alice = Key.generate();
const bob = Key.generate();
for (const k of [alice, bob]) {
  const r = await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }));
  if (!r.ok) throw new Error(`faucet: ${r.error}`);
}

const { id, receipt } = await Channel.offer(chain, alice, { rules: 'rps_rules', stake: '100', windowMs: 300000 });
await Channel.join(chain, bob, id); // bob, on his side
console.log(`game ${id}: alice ${alice.address}, bob ${bob.address}`);

// One client per player; each keeps its moves and salt in its store (memory here).
const choices = [1, 0]; // alice paper, bob rock
const subs = [];
const answers = [];
const finished = [];
for (const [seat, key] of [alice, bob].entries()) {
  const game = await Channel.open(chain, key, id, { fromHeight: receipt.height });
  const rps = new Rps(game);
  let over;
  finished.push(new Promise((resolve, reject) => { over = { resolve, reject }; }));
  const answer = async () => {
    try {
      if (rps.phase === 'commit' && game.myTurn) await rps.commit(choices[seat]);
      else await rps.step(); // reveals once both commits are in, when it is this seat's turn
      if (game.over) over.resolve(game);
    } catch (e) { over.reject(e); }
  };
  answers.push(answer);
  subs.push(await game.listen({ onMove: answer })); // the opponent's moves, checked
}
await answers[0](); // alice moves first
const [game] = await Promise.all(finished);
subs.forEach((s) => s.close());
console.log(`over: seat ${game.winner} won, choices ${new Rps(game).result().choices}`);

const settled = await game.settle(); // anyone may settle; final one window (of block time) later
const finalAt = (await game.refresh()).outcome.final_at_ms;
console.log(`settled at block ${settled.height}: final at block time ${finalAt}`);
if (process.env.GAMECHAIN_DEV_CLOCK === '1') {
  await fetch(`${url}/v1/dev/clock`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ advance_ms: game.record.window_ms }) });
}
// The withdraw is refused before a block's time reaches finalAt: wait for the head block's time.
while ((await chain.block('latest')).header.time_ms + 1000 < finalAt) await new Promise((r) => setTimeout(r, 1000));
for (;;) {
  try {
    await game.withdraw();
    break;
  } catch (e) {
    if (e.code !== 'refused' || !/final at block time/.test(e.message)) throw e;
    await new Promise((r) => setTimeout(r, 500));
  }
}
const gold = async (a) => (await chain.account(a)).balances.GOLD;
console.log(`paid: alice ${await gold(alice.address)}, bob ${await gold(bob.address)}`);
