//! `data` of the group events (`group:*`).
//!
//! Every group event carries the acting user (`user`), `groupName` and `groupId`. The
//! reference gives no element type for `members` and no type for `owner`, so they stay JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The user in a group event's `data.user`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GroupUser {
    /// User id (`id`; an integer on the wire is kept as its decimal text).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub id: String,
    /// Full name (`fullName`).
    pub full_name: String,
    /// Username (`userName`).
    pub user_name: String,
    /// E-mail address (`email`).
    pub email: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `group:create`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GroupCreate {
    /// The user who acted (`user`).
    pub user: GroupUser,
    /// Name of the group (`groupName`).
    pub group_name: String,
    /// Id of the group (`groupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub group_id: String,
    /// Initial members (`members`; element type not shown in the reference).
    pub members: Vec<Value>,
    /// Owner (`owner`; type not shown in the reference).
    pub owner: Value,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `group:delete` and `group:rename`, which carry only the common group fields.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GroupChange {
    /// The user who acted (`user`).
    pub user: GroupUser,
    /// Name of the group (`groupName`; for a rename, as the event carries it).
    pub group_name: String,
    /// Id of the group (`groupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub group_id: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `group:add_members` and `group:remove_members`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GroupMembers {
    /// The user who acted (`user`).
    pub user: GroupUser,
    /// Name of the group (`groupName`).
    pub group_name: String,
    /// Id of the group (`groupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub group_id: String,
    /// Members added or removed (`members`; element type not shown in the reference).
    pub members: Vec<Value>,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `group:add_owner` and `group:remove_owner`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct GroupOwner {
    /// The user who acted (`user`).
    pub user: GroupUser,
    /// Name of the group (`groupName`).
    pub group_name: String,
    /// Id of the group (`groupId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub group_id: String,
    /// Owner added or removed (`owner`; type not shown in the reference).
    pub owner: Value,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
