//! The workload `gamechain bench` sends: keys, and every transaction signed before the clock
//! starts, split into **lanes** (one per connection). A lane holds whole units (one account's
//! transfers, or one pair's tic-tac-toe games) interleaved round-robin, so posting a lane in
//! order keeps every sender's nonces and every game's moves in order, whatever the other lanes
//! do.

use gamechain_runtime::chain::{Action, Network, SecretKey, SignedTx, TxBody};
use gamechain_sdk::Amount;
use serde_json::{json, Value};

/// What the accounts do.
#[derive(Debug, Clone, PartialEq, Eq, clap::ValueEnum, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// Each account sends 1 base unit of GOLD to the next account, again and again.
    Transfer,
    /// Accounts play tic-tac-toe in pairs: create (stake 1), join, five moves to a win for x
    /// (7 transactions a game).
    Tictactoe,
    /// Half the accounts transfer, the other half play tic-tac-toe.
    Mix,
    /// Each account sends `--op` to `--module`, `{i}` in the op replaced by a running number.
    Module,
}

/// Transactions of one tic-tac-toe game.
pub const GAME_TXS: usize = 7;

/// What to build.
#[derive(Debug, Clone)]
pub struct Plan {
    /// The workload.
    pub kind: Kind,
    /// Accounts.
    pub accounts: usize,
    /// Transactions to sign in all (rounded up to whole games).
    pub txs: usize,
    /// Lanes (connections).
    pub lanes: usize,
    /// `Kind::Module`: the module id and the op template.
    pub module: Option<(String, String)>,
}

/// One unit of work: a sequence of (signer, action) that must be posted in order.
type Unit = Vec<(usize, Action)>;

/// The keys and signed lanes of a plan; nonces start at each account's `next_nonce` (given).
pub struct Workload {
    /// The accounts' keys.
    pub keys: Vec<SecretKey>,
    /// Signed transactions per lane, in posting order.
    pub lanes: Vec<Vec<SignedTx>>,
}

/// `accounts` new keys of `network`.
pub fn keys(network: Network, accounts: usize) -> Vec<SecretKey> {
    (0..accounts)
        .map(|_| SecretKey::generate(network))
        .collect()
}

fn transfer_unit(account: usize, to: &SecretKey, count: usize) -> Unit {
    (0..count)
        .map(|_| {
            (
                account,
                Action::Transfer {
                    to: to.address(),
                    token: "GOLD".into(),
                    amount: Amount(1),
                },
            )
        })
        .collect()
}

fn ttt(op: Value) -> Action {
    Action::game("tictactoe", &op)
}

/// Units are turned into transactions here (a game's id is its create's txid, so a game is
/// signed move by move).
struct Signer<'a> {
    keys: &'a [SecretKey],
    nonces: Vec<u64>,
    chain_id: &'a str,
}

impl Signer<'_> {
    fn sign(&mut self, account: usize, action: Action) -> SignedTx {
        let key = &self.keys[account];
        let nonce = self.nonces[account];
        self.nonces[account] += 1;
        TxBody {
            chain_id: self.chain_id.to_string(),
            from: key.address(),
            nonce,
            action,
        }
        .sign(key)
    }

    /// `games` games of `x` against `o`, in order.
    fn games(&mut self, x: usize, o: usize, games: usize) -> Vec<SignedTx> {
        let mut out = Vec::with_capacity(games * GAME_TXS);
        for _ in 0..games {
            let create = self.sign(x, ttt(json!({"kind": "create", "stake": "1"})));
            let id = create.txid()[..16].to_string();
            out.push(create);
            out.push(self.sign(o, ttt(json!({"kind": "join", "id": id}))));
            for (who, cell) in [(x, 0), (o, 3), (x, 1), (o, 4), (x, 2)] {
                out.push(self.sign(who, ttt(json!({"kind": "move", "id": id, "cell": cell}))));
            }
        }
        out
    }

    fn unit(&mut self, unit: Unit) -> Vec<SignedTx> {
        unit.into_iter()
            .map(|(a, action)| self.sign(a, action))
            .collect()
    }
}

/// Signs `plan` for `keys` (whose next nonces are `nonces`) on chain `chain_id`. Errors: a
/// plan that cannot be built (too few accounts for its kind, a bad op template).
pub fn build(
    plan: &Plan,
    keys: &[SecretKey],
    nonces: Vec<u64>,
    chain_id: &str,
) -> Result<Workload, String> {
    let n = keys.len();
    if n < 2 {
        return Err("bench needs at least 2 accounts".into());
    }
    if plan.kind == Kind::Mix && n < 4 {
        return Err(
            "--workload mix needs at least 4 accounts (2 that play, 2 that transfer)".into(),
        );
    }
    let mut signer = Signer {
        keys,
        nonces,
        chain_id,
    };
    // Units as signed sequences.
    let mut units: Vec<Vec<SignedTx>> = Vec::new();
    let (transferers, players): (Vec<usize>, Vec<usize>) = match plan.kind {
        Kind::Transfer | Kind::Module => ((0..n).collect(), Vec::new()),
        Kind::Tictactoe => (Vec::new(), (0..n - n % 2).collect()),
        Kind::Mix => {
            let half = (n / 2) & !1;
            ((half..n).collect(), (0..half).collect())
        }
    };
    let pairs = players.len() / 2;
    let share = |txs: usize, parts: usize| txs.div_ceil(parts.max(1));
    let (transfer_txs, game_txs) = match (transferers.is_empty(), pairs == 0) {
        (false, true) => (plan.txs, 0),
        (true, false) => (0, plan.txs),
        (false, false) => (plan.txs / 2, plan.txs - plan.txs / 2),
        (true, true) => return Err("bench: no account can do this workload".into()),
    };
    if pairs > 0 {
        let games = share(share(game_txs, GAME_TXS), pairs);
        for p in 0..pairs {
            units.push(signer.games(players[2 * p], players[2 * p + 1], games));
        }
    }
    if !transferers.is_empty() {
        let each = share(transfer_txs, transferers.len());
        for (i, &a) in transferers.iter().enumerate() {
            let unit = match (&plan.kind, &plan.module) {
                (Kind::Module, Some((module, template))) => {
                    module_unit(a, module, template, each, i)?
                }
                (Kind::Module, None) => {
                    return Err("--workload module needs --module and --op".into())
                }
                _ => {
                    let to = &keys[transferers[(i + 1) % transferers.len()]];
                    transfer_unit(a, to, each)
                }
            };
            units.push(signer.unit(unit));
        }
    }
    // Deal the units to lanes, then interleave each lane's units round-robin.
    let lanes = plan.lanes.max(1).min(units.len());
    let mut dealt: Vec<Vec<Vec<SignedTx>>> = vec![Vec::new(); lanes];
    for (i, unit) in units.into_iter().enumerate() {
        dealt[i % lanes].push(unit);
    }
    let lanes = dealt.into_iter().map(interleave).collect();
    Ok(Workload {
        keys: keys.to_vec(),
        lanes,
    })
}

fn module_unit(
    account: usize,
    module: &str,
    template: &str,
    count: usize,
    seq: usize,
) -> Result<Unit, String> {
    (0..count)
        .map(|k| {
            let text = template.replace("{i}", &(seq * count + k).to_string());
            let op: Value = serde_json::from_str(&text)
                .map_err(|e| format!("--op is not JSON once {{i}} is replaced: {e}"))?;
            Ok((account, Action::game(module, &op)))
        })
        .collect()
}

/// Round-robin merge: the first of every unit, then the second of every unit, …
fn interleave(units: Vec<Vec<SignedTx>>) -> Vec<SignedTx> {
    let total = units.iter().map(Vec::len).sum();
    let mut iters: Vec<_> = units.into_iter().map(Vec::into_iter).collect();
    let mut out = Vec::with_capacity(total);
    while out.len() < total {
        for it in &mut iters {
            if let Some(tx) = it.next() {
                out.push(tx);
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    fn plan(kind: Kind, accounts: usize, txs: usize, lanes: usize) -> (Plan, Vec<SecretKey>) {
        let keys = keys(Network::Testnet, accounts);
        (
            Plan {
                kind,
                accounts,
                txs,
                lanes,
                module: None,
            },
            keys,
        )
    }

    /// Every sender's nonces appear in order within its lane, and in one lane only.
    fn check_order(w: &Workload) {
        let mut lane_of: BTreeMap<String, usize> = BTreeMap::new();
        let mut next: BTreeMap<String, u64> = BTreeMap::new();
        for (l, lane) in w.lanes.iter().enumerate() {
            for tx in lane {
                let body = tx.check("c", Network::Testnet).unwrap();
                assert_eq!(*lane_of.entry(body.from.clone()).or_insert(l), l);
                let n = next.entry(body.from).or_insert(0);
                assert_eq!(body.nonce, *n);
                *n += 1;
            }
        }
    }

    #[test]
    fn lanes_keep_nonces_and_games_in_order() {
        for kind in [Kind::Transfer, Kind::Tictactoe, Kind::Mix] {
            let (p, keys) = plan(kind.clone(), 10, 100, 3);
            let w = build(&p, &keys, vec![0; 10], "c").unwrap();
            assert_eq!(w.lanes.len(), 3);
            let total: usize = w.lanes.iter().map(Vec::len).sum();
            assert!(
                (100..100 + 10 * GAME_TXS).contains(&total),
                "{kind:?}: {total}"
            );
            check_order(&w);
        }
    }

    #[test]
    fn a_game_is_create_join_and_five_moves_on_its_own_id() {
        let (p, keys) = plan(Kind::Tictactoe, 2, 7, 1);
        let w = build(&p, &keys, vec![5, 9], "c").unwrap();
        let bodies: Vec<_> = w.lanes[0]
            .iter()
            .map(|t| t.check("c", Network::Testnet).unwrap())
            .collect();
        assert_eq!(bodies.len(), GAME_TXS);
        assert_eq!(
            (bodies[0].nonce, bodies[1].nonce),
            (5, 9),
            "nonces start at the given ones"
        );
        let id = &w.lanes[0][0].txid()[..16];
        for b in &bodies[1..] {
            let Action::Game { op, .. } = &b.action else {
                panic!()
            };
            assert!(op.get().contains(id));
        }
    }

    #[test]
    fn module_ops_number_their_template() {
        let (mut p, keys) = plan(Kind::Module, 2, 4, 2);
        p.module = Some(("counter".into(), r#"{"n":{i}}"#.into()));
        let w = build(&p, &keys, vec![0, 0], "c").unwrap();
        let ops: Vec<String> = w
            .lanes
            .iter()
            .flatten()
            .map(|t| match t.check("c", Network::Testnet).unwrap().action {
                Action::Game { op, .. } => op.get().to_string(),
                _ => panic!(),
            })
            .collect();
        assert_eq!(ops.len(), 4);
        assert!(ops.contains(&r#"{"n":0}"#.to_string()) && ops.contains(&r#"{"n":3}"#.to_string()));
        p.module = Some(("counter".into(), "{bad".into()));
        assert!(build(&p, &keys, vec![0, 0], "c").is_err());
    }
}
