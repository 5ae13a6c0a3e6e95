//! The names of webhook events (reference section 6.2).

use super::open_enum::open_enum;

open_enum! {
    /// The name of a webhook event, as carried in `eventType`.
    ///
    /// One variant per event of the reference (section 6.2); any other name parses into
    /// [`EventType::Other`], so a delivery of an event added to the platform later is still
    /// accepted.
    ///
    /// ```
    /// use pubapi_sdk_ext::webhook::EventType;
    ///
    /// let known: EventType = "fs:add_file".parse().unwrap();
    /// assert_eq!(known, EventType::FsAddFile);
    /// assert_eq!(known.family(), "fs");
    ///
    /// let later: EventType = "fs:tag_file".parse().unwrap();
    /// assert_eq!(later, EventType::Other("fs:tag_file".into()));
    /// assert!(!later.is_known());
    /// ```
    pub enum EventType {
        /// A file or a new version of a file was added.
        FsAddFile = "fs:add_file",
        /// A folder was created.
        FsAddFolder = "fs:add_folder",
        /// A file was copied.
        FsCopyFile = "fs:copy_file",
        /// A folder was copied.
        FsCopyFolder = "fs:copy_folder",
        /// A file was moved or renamed.
        FsMoveFile = "fs:move_file",
        /// A folder was moved or renamed.
        FsMoveFolder = "fs:move_folder",
        /// A file (or one of its versions) was deleted.
        FsDeleteFile = "fs:delete_file",
        /// A folder was deleted.
        FsDeleteFolder = "fs:delete_folder",
        /// A file or folder was restored from the trash.
        FsRestoreFromTrash = "fs:restore_from_trash",
        /// A file or folder was removed from the trash.
        FsDeleteFromTrash = "fs:delete_from_trash",
        /// A file was locked.
        FsLockFile = "fs:lock_file",
        /// A file was unlocked.
        FsUnlockFile = "fs:unlock_file",
        /// A file arrived through an upload link.
        FsUploadLink = "fs:upload_link",
        /// Activity in a project folder.
        FsFolderProjectActivity = "fs:folder_project_activity",
        /// A link was created.
        LinkCreate = "link:create",
        /// A link was deleted.
        LinkDelete = "link:delete",
        /// A download link was created.
        LinkCreateDownloadLink = "link:create_download_link",
        /// A download link was deleted.
        LinkDeleteDownloadLink = "link:delete_download_link",
        /// An upload link was created.
        LinkCreateUploadLink = "link:create_upload_link",
        /// An upload link was deleted.
        LinkDeleteUploadLink = "link:delete_upload_link",
        /// A comment was set.
        CommentSetComment = "comment:set_comment",
        /// A comment was removed.
        CommentRemoveComment = "comment:remove_comment",
        /// A folder permission changed.
        PermissionPermissionChange = "permission:permission_change",
        /// A metadata key was added.
        MetaAddMetadataKey = "meta:add_metadata_key",
        /// A metadata key was deleted.
        MetaDeleteMetadataKey = "meta:delete_metadata_key",
        /// A group was created.
        GroupCreate = "group:create",
        /// A group was deleted.
        GroupDelete = "group:delete",
        /// A group was renamed.
        GroupRename = "group:rename",
        /// Members were added to a group.
        GroupAddMembers = "group:add_members",
        /// Members were removed from a group.
        GroupRemoveMembers = "group:remove_members",
        /// An owner was added to a group.
        GroupAddOwner = "group:add_owner",
        /// An owner was removed from a group.
        GroupRemoveOwner = "group:remove_owner",
        /// A workflow was created.
        WorkflowCreated = "workflow:created",
        /// A workflow completed.
        WorkflowCompleted = "workflow:completed",
        /// An approval task of a workflow was approved.
        WorkflowApprovaltaskApproved = "workflow:approvaltask_approved",
        /// An approval task of a workflow was rejected.
        WorkflowApprovaltaskRejected = "workflow:approvaltask_rejected",
    }
}

impl EventType {
    /// The family of the event: the text before the first `:` (`fs`, `link`, `group`...), or
    /// the whole name when it has no `:`.
    ///
    /// ```
    /// use pubapi_sdk_ext::webhook::EventType;
    ///
    /// assert_eq!(EventType::WorkflowCompleted.family(), "workflow");
    /// ```
    #[must_use]
    pub fn family(&self) -> &str {
        let name = self.as_str();
        name.split_once(':').map_or(name, |(family, _)| family)
    }
}

#[cfg(test)]
mod tests {
    use super::EventType;

    #[test]
    fn every_documented_event_name_parses_into_its_named_variant() {
        assert_eq!(EventType::ALL.len(), 36);
        for known in EventType::ALL {
            let parsed: EventType = known.as_str().parse().unwrap();
            assert!(!matches!(parsed, EventType::Other(_)), "{known}");
            assert_eq!(&parsed, known);
            assert!(parsed.is_known());
        }
    }

    #[test]
    fn unknown_event_name_parses_into_other_verbatim() {
        let parsed: EventType = "user:create".parse().unwrap();
        assert_eq!(parsed, EventType::Other("user:create".to_owned()));
        assert_eq!(parsed.as_str(), "user:create");
        assert_eq!(parsed.to_string(), "user:create");
    }

    #[test]
    fn other_with_a_known_name_equals_the_named_variant() {
        assert_eq!(
            EventType::Other("fs:add_file".to_owned()),
            EventType::FsAddFile
        );
    }

    #[test]
    fn event_type_is_a_plain_string_in_json() {
        let json = serde_json::to_string(&EventType::GroupAddOwner).unwrap();
        assert_eq!(json, r#""group:add_owner""#);
        let back: EventType = serde_json::from_str(r#""meta:add_metadata_key""#).unwrap();
        assert_eq!(back, EventType::MetaAddMetadataKey);
        let other: EventType = serde_json::from_str(r#""x""#).unwrap();
        assert_eq!(other, EventType::Other("x".to_owned()));
    }

    #[test]
    fn family_is_the_text_before_the_colon() {
        assert_eq!(EventType::FsAddFile.family(), "fs");
        assert_eq!(EventType::PermissionPermissionChange.family(), "permission");
        assert_eq!(EventType::Other("nocolon".into()).family(), "nocolon");
    }
}
