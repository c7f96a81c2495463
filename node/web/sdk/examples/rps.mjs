// rps.mjs: a whole rock-paper-scissors game off-chain (docs/channels.md) from Node, both players
// in one script (in a real game each runs on their own machine): alice offers, bob joins, each
// client listens for the other's moves on the move board and answers them (bob commits once he
// has seen alice's commit, the reveals go once both commits are in), then alice settles by
// history, waits one window and withdraws. Needs channel, moveboard and rps_rules deployed.
//   GAMECHAIN_NODE=http://127.0.0.1:8645 node examples/rps.mjs
import { Chain, Key, Channel, Rps } from '@gamechain/sdk';

const chain = new Chain(process.env.GAMECHAIN_NODE ?? 'http://127.0.0.1:8645');
const alice = Key.generate();
const bob = Key.generate();
for (const k of [alice, bob]) {
  const r = await chain.waitForReceipt(await chain.send(k, { type: 'faucet', token: 'GOLD' }));
  if (!r.ok) throw new Error(`faucet: ${r.error}`);
}

const { id, receipt } = await Channel.offer(chain, alice, { rules: 'rps_rules', stake: '100', window: 5 });
await Channel.join(chain, bob, id); // bob, on his side
console.log(`game ${id}: alice ${alice.address}, bob ${bob.address}`);

// One client per player; each keeps its moves and salt in its store (memory here).
const choices = [1, 0]; // alice paper, bob rock
const subs = [];
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
  subs.push(await game.listen({ onMove: answer })); // the opponent's moves, checked
  if (seat === 0) await answer(); // alice moves first
}
const [game] = await Promise.all(finished);
subs.forEach((s) => s.close());
console.log(`over: seat ${game.winner} won, choices ${new Rps(game).result().choices}`);

const settled = await game.settle(); // anyone may settle; final one window later
const finalAt = settled.height + game.record.window;
while ((await chain.status()).height + 1 < finalAt) await new Promise((r) => setTimeout(r, 200));
await game.withdraw();
const gold = async (a) => (await chain.account(a)).balances.GOLD;
console.log(`paid: alice ${await gold(alice.address)}, bob ${await gold(bob.address)}`);
