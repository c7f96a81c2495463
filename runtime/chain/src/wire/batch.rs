//! `POST /v1/txs`, many signed transactions in one request: [`TxBatch`] (the request) and
//! [`TxBatchAnswer`] (one [`BatchResult`] per transaction, in request order).
//!
//! JSON: request `{"txs": [{"body": "…", "signature": "…"}, …]}`; answer `{"results":
//! [{"txid": "<64 hex>"} | {"error": {"code", "message"}, "status": 409}, …]}`, where an error
//! is what `POST /v1/tx` would have answered for that transaction alone (its HTTP status in
//! `status`).

use serde::{Deserialize, Serialize};

use crate::block::tx::SignedTx;
use crate::wire::node::ErrorBody;

/// The request of `POST /v1/txs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TxBatch {
    /// The transactions, admitted in this order.
    pub txs: Vec<SignedTx>,
}

/// The outcome of one transaction of a batch.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum BatchResult {
    /// Accepted: its txid.
    Accepted {
        /// The txid.
        txid: String,
    },
    /// Refused: the error `POST /v1/tx` would have given, and its HTTP status.
    Refused {
        /// The API error.
        error: ErrorBody,
        /// Its HTTP status (e.g. 409 for `bad_nonce`).
        status: u16,
    },
}

/// The answer of `POST /v1/txs`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TxBatchAnswer {
    /// One result per transaction, in request order.
    pub results: Vec<BatchResult>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn results_read_back_in_both_shapes() {
        let text = r#"{"results":[{"txid":"ab"},{"error":{"code":"bad_nonce","message":"m"},"status":409}]}"#;
        let answer: TxBatchAnswer = serde_json::from_str(text).unwrap();
        assert_eq!(
            answer.results,
            [
                BatchResult::Accepted { txid: "ab".into() },
                BatchResult::Refused {
                    error: ErrorBody {
                        code: "bad_nonce".into(),
                        message: "m".into()
                    },
                    status: 409
                }
            ]
        );
        assert_eq!(serde_json::to_string(&answer).unwrap(), text);
    }
}
