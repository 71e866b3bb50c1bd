//! How contract values map to columns: roles as small integers, and the bound on
//! seqs that lets SQLite pack (conversation, seq) into one rowid.

use crate::stowage::store::types::Role;

/// Every seq is below this bound. SQLite stores a message at rowid
/// `cid * 2^32 + seq`, so a seq must fit 32 bits; the bound holds on PostgreSQL
/// too, so both dialects accept exactly the same inputs.
pub const SEQ_LIMIT: u64 = 1 << 32;

/// The largest cid whose rowids `cid * 2^32 + seq` still fit a positive `i64`.
pub const CID_LIMIT: i64 = (1 << 31) - 1;

/// The column value of `role`, in WIT declaration order.
pub fn role_code(role: Role) -> i64 {
    match role {
        Role::System => 0,
        Role::Developer => 1,
        Role::User => 2,
        Role::Assistant => 3,
        Role::Tool => 4,
    }
}

/// The role stored as `code`, or `None` for a code no role has.
pub fn role_from_code(code: i64) -> Option<Role> {
    Some(match code {
        0 => Role::System,
        1 => Role::Developer,
        2 => Role::User,
        3 => Role::Assistant,
        4 => Role::Tool,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_role_round_trips_through_its_code() {
        for role in [Role::System, Role::Developer, Role::User, Role::Assistant, Role::Tool] {
            assert_eq!(role_from_code(role_code(role)), Some(role));
        }
        assert_eq!(role_from_code(5), None);
        assert_eq!(role_from_code(-1), None);
    }

    #[test]
    fn the_largest_key_fits_a_positive_rowid() {
        let largest = i128::from(CID_LIMIT) * i128::from(SEQ_LIMIT) + i128::from(SEQ_LIMIT - 1);
        assert!(largest <= i128::from(i64::MAX));
    }
}
