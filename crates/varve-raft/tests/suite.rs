//! openraft's own storage test suite (`openraft::testing::Suite`, the
//! checks every log store and state machine must pass) against varve-raft,
//! each test on a fresh database in a temporary directory.

use openraft::StorageError;
use openraft::testing::{StoreBuilder, Suite};
use varve_raft::{LogStore, NodeId, StateMachine, TypeConfig};

struct Builder;

impl StoreBuilder<TypeConfig, LogStore, StateMachine, tempfile::TempDir> for Builder {
    async fn build(
        &self,
    ) -> Result<(tempfile::TempDir, LogStore, StateMachine), StorageError<NodeId>> {
        let dir = tempfile::tempdir().expect("temp dir");
        let (log, sm) = varve_raft::open(dir.path()).expect("open a varve-raft store");
        Ok((dir, log, sm))
    }
}

#[test]
fn openraft_storage_suite_passes() {
    Suite::test_all(Builder).expect("openraft's storage suite");
}
