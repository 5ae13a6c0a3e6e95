//! `data` of the workflow events (`workflow:*`).
//!
//! Every workflow event carries `workflow` and `firstEntity`. Fields whose type the reference
//! does not show (`definitionJson`, `completionStatusCode`, `totalNumberOfSteps`, the dates)
//! stay JSON.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The workflow in a workflow event's `data.workflow`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WorkflowInfo {
    /// Workflow id (`id`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub id: String,
    /// Workflow name (`name`).
    pub name: String,
    /// Id shown to people (`displayId`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub display_id: String,
    /// Workflow type (`type`).
    #[serde(rename = "type")]
    pub workflow_type: String,
    /// Status of the action (`actionStatus`).
    pub action_status: String,
    /// Template the workflow came from (`templateId`, optional).
    #[serde(
        default,
        deserialize_with = "super::lenient_id::optional",
        skip_serializing_if = "Option::is_none"
    )]
    pub template_id: Option<String>,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The first item a workflow runs on (`data.firstEntity`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FirstEntity {
    /// Kind of the item (`type`).
    #[serde(rename = "type")]
    pub entity_type: String,
    /// Path of the item (`filePath`).
    #[serde(rename = "filePath")]
    pub file_path: String,
    /// Version id (`entryID`).
    #[serde(rename = "entryID", deserialize_with = "super::lenient_id::required")]
    pub entry_id: String,
    /// File id (`groupID`).
    #[serde(rename = "groupID", deserialize_with = "super::lenient_id::required")]
    pub group_id: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The step of an approval task (`data.step`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct WorkflowStep {
    /// Step id (`id`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub id: String,
    /// Step name (`name`).
    pub name: String,
    /// Step type (`type`).
    #[serde(rename = "type")]
    pub step_type: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// The person an approval task was assigned to (`data.assignee`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WorkflowAssignee {
    /// User id (`id`).
    #[serde(deserialize_with = "super::lenient_id::required")]
    pub id: String,
    /// Display name (`displayName`).
    pub display_name: String,
    /// Username (`username`).
    pub username: String,
    /// E-mail address (`email`).
    pub email: String,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `workflow:created`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WorkflowCreated {
    /// The workflow (`workflow`).
    pub workflow: WorkflowInfo,
    /// The first item it runs on (`firstEntity`).
    pub first_entity: FirstEntity,
    /// The workflow definition (`definitionJson`; free-form, its shape is not shown).
    pub definition_json: Value,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `workflow:completed`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WorkflowCompleted {
    /// The workflow (`workflow`).
    pub workflow: WorkflowInfo,
    /// The first item it ran on (`firstEntity`).
    pub first_entity: FirstEntity,
    /// How it completed (`completionStatusCode`; type not shown).
    pub completion_status_code: Value,
    /// Number of steps (`totalNumberOfSteps`; type not shown).
    pub total_number_of_steps: Value,
    /// When it completed (`completionDate`; format not shown).
    pub completion_date: Value,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

/// `data` of `workflow:approvaltask_approved` and `workflow:approvaltask_rejected`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct WorkflowApprovalTask {
    /// The workflow (`workflow`).
    pub workflow: WorkflowInfo,
    /// The first item it runs on (`firstEntity`).
    pub first_entity: FirstEntity,
    /// The approval step (`step`).
    pub step: WorkflowStep,
    /// Who was asked to approve (`assignee`).
    pub assignee: WorkflowAssignee,
    /// Number of steps (`totalNumberOfSteps`; type not shown).
    pub total_number_of_steps: Value,
    /// When the task was decided (`completionDate`; format not shown).
    pub completion_date: Value,
    /// When the task was created (`creationDate`; format not shown).
    pub creation_date: Value,
    /// Fields the reference does not list, kept as received.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}
