//! Every event of reference 6.2, from a body written from the reference, into its variant.

use serde_json::{Value, json};

use crate::webhook::{
    Delivery, DeliveryItem, EventData, EventType, WebhookCustomProperties, WebhookEvent,
    WebhookItemType as ItemType, WebhookLinkType as LinkType, testing,
};

/// Parses a one-event delivery whose element is written out in full here.
fn parse_event(event_type: &str, data: Value) -> WebhookEvent {
    let body = json!({"data": [{
        "eventId": "0f8fad5b-d9cb-469f-a165-70867728950e",
        "domain": "acme",
        "timestamp": 1_714_000_000_123_i64,
        "user": {
            "id": 42,
            "displayName": "Ada Lovelace",
            "username": "ada",
            "email": "ada@acme.test"
        },
        "actionSource": "WebUI",
        "eventType": event_type,
        "webhookId": "wh-9",
        "data": data
    }]});
    let delivery = Delivery::parse(&serde_json::to_vec(&body).unwrap()).unwrap();
    let [DeliveryItem::Event(event)] = <[DeliveryItem; 1]>::try_from(delivery.items).unwrap()
    else {
        panic!("not an event")
    };
    assert_eq!(event.event_type.as_str(), event_type);
    assert!(!event.data.is_unknown(), "{event_type}: {:?}", event.data);
    assert_eq!(event.data.event_type().as_str(), event_type);
    *event
}

#[test]
fn envelope_fields_are_read() {
    let event = parse_event("fs:add_folder", json!({"targetPath": "/A"}));
    assert_eq!(event.event_id, "0f8fad5b-d9cb-469f-a165-70867728950e");
    assert_eq!(event.domain, "acme");
    assert_eq!(event.timestamp_ms, 1_714_000_000_123);
    assert_eq!(event.user.id, 42);
    assert_eq!(event.user.display_name, "Ada Lovelace");
    assert_eq!(event.user.username, "ada");
    assert_eq!(event.user.email, "ada@acme.test");
    assert_eq!(event.user.client_id_hash, None);
    assert_eq!(event.user.impersonated_by, None);
    assert_eq!(event.action_source, "WebUI");
    assert_eq!(event.webhook_id, "wh-9");
    assert_eq!(event.custom_properties, None);
    assert!(event.extra.is_empty());
    assert_eq!(
        std::time::SystemTime::from(event.occurred_at().unwrap()),
        std::time::UNIX_EPOCH + std::time::Duration::from_millis(1_714_000_000_123)
    );
}

#[test]
fn delivery_timestamp_is_unix_time_in_milliseconds() {
    // Reference 2.10: `timestamp` is an integer, Unix time in milliseconds.
    let mut event = parse_event("fs:add_folder", json!({"targetPath": "/A"}));
    assert_eq!(
        event.occurred_at().unwrap().to_string(),
        "2024-04-24T23:06:40.123Z"
    );
    event.timestamp_ms = i64::MIN;
    assert_eq!(event.occurred_at().unwrap_err().field(), "timestamp");
}

#[test]
fn optional_user_fields_and_custom_properties_are_read() {
    let body = json!({"data": [{
        "eventId": "e", "domain": "acme", "timestamp": 1, "actionSource": "PublicAPI",
        "eventType": "fs:add_folder", "webhookId": "w", "data": {"targetPath": "/A"},
        "user": {"id": 1, "displayName": "A", "username": "a", "email": "a@x",
                 "clientIdHash": "a9993e364706816aba3e25717850c26c9cd0d89d",
                 "impersonatedBy": "admin"},
        "customProperties": {"PROJECT_ID": "p-1", "PROJECT_ROOT_FOLDER_ID": 77,
                             "FOLDER_PROJECT_ACTIVITY_ACTION_INFO": {"action": "x"},
                             "fileUpdated": true}
    }]});
    let delivery = Delivery::parse(body.to_string().as_bytes()).unwrap();
    let event = delivery.events().next().unwrap();
    assert_eq!(
        event.user.client_id_hash.as_deref(),
        Some("a9993e364706816aba3e25717850c26c9cd0d89d")
    );
    assert_eq!(event.user.impersonated_by.as_deref(), Some("admin"));
    let props: &WebhookCustomProperties = event.custom_properties.as_ref().unwrap();
    assert_eq!(props.project_id, Some(json!("p-1")));
    assert_eq!(props.project_root_folder_id, Some(json!(77)));
    assert_eq!(
        props.folder_project_activity_action_info,
        Some(json!({"action": "x"}))
    );
    assert_eq!(props.file_updated, Some(json!(true)));
}

/// Keeps what a `tracing` subscriber writes.
#[derive(Clone, Default)]
struct Captured(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for Captured {
    type Writer = Captured;

    fn make_writer(&'a self) -> Captured {
        self.clone()
    }
}

/// `customProperties` is optional (reference 2.10): one of another JSON type costs the
/// event nothing. It is not read, a warning names the event, the value stays in `extra`
/// as sent, and the event is handed over (not a dead letter), by `Delivery::parse`, by
/// `DeliveryItem::from_value` and by the receiver alike.
#[test]
fn custom_properties_of_another_type_are_dropped_with_a_warning_and_the_event_kept() {
    for value in [
        json!(false),
        json!([]),
        json!("p-1"),
        json!(7),
        json!([{"PROJECT_ID": 1}]),
    ] {
        let mut element = testing::sample_event(&EventType::FsAddFolder, "e-7");
        element["customProperties"] = value.clone();
        let body = serde_json::to_vec(&json!({ "data": [element.clone()] })).unwrap();

        let captured = Captured::default();
        let subscriber = tracing_subscriber::fmt()
            .with_writer(captured.clone())
            .with_ansi(false)
            .finish();
        let delivery =
            tracing::subscriber::with_default(subscriber, || Delivery::parse(&body).unwrap());
        let log = String::from_utf8(captured.0.lock().unwrap().clone()).unwrap();
        assert!(
            log.contains("WARN") && log.contains("customProperties"),
            "{value}: {log}"
        );
        assert!(log.contains("e-7"), "the warning names the event: {log}");

        let from_value = DeliveryItem::from_value(element);
        for item in [&delivery.items[0], &from_value] {
            let DeliveryItem::Event(event) = item else {
                panic!("{value}: {item:?}")
            };
            assert_eq!(event.custom_properties, None, "{value}");
            assert_eq!(event.extra.get("customProperties"), Some(&value));
            assert!(!event.data.is_unknown());
            // Written back as it came.
            let written = serde_json::to_value(event.as_ref()).unwrap();
            assert_eq!(written["customProperties"], value);
        }

        let receiver = crate::webhook::Receiver::builder()
            .secret(crate::webhook::WebhookSecret::new("s3cret-0123456789abcdef").unwrap())
            .build()
            .unwrap();
        let keep = KeepBatches::default();
        let headers = testing::authorized_headers("s3cret-0123456789abcdef");
        let outcome = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap()
            .block_on(receiver.handle(&headers, &body, &keep));
        assert_eq!((outcome.accepted, outcome.dead_letters), (1, 0), "{value}");
    }
}

/// Keeps the batches a receiver hands over.
#[derive(Default)]
struct KeepBatches(std::sync::Mutex<Vec<crate::webhook::Batch>>);

impl crate::webhook::DeliveryHandler for KeepBatches {
    async fn handle_batch(
        &self,
        batch: crate::webhook::Batch,
    ) -> Result<(), crate::webhook::HandlerError> {
        self.0.lock().unwrap().push(batch);
        Ok(())
    }
}

#[test]
fn fs_add_file_is_typed() {
    let event = parse_event(
        "fs:add_file",
        json!({"targetEntryId": "e1", "targetGroupId": "g1", "targetFileChecksum": "c1",
               "targetPath": "/A/b.txt", "itemType": "version"}),
    );
    let EventData::FsAddFile(d) = event.data else {
        panic!()
    };
    assert_eq!(
        (
            d.target_entry_id.as_str(),
            d.target_group_id.as_str(),
            d.target_file_checksum.as_str(),
            d.target_path.as_str()
        ),
        ("e1", "g1", "c1", "/A/b.txt")
    );
    assert_eq!(d.item_type, ItemType::Version);
}

#[test]
fn fs_path_only_events_are_typed() {
    for name in [
        "fs:add_folder",
        "fs:delete_folder",
        "fs:delete_from_trash",
        "fs:folder_project_activity",
    ] {
        let event = parse_event(name, json!({"targetPath": "/Projects/X"}));
        // Four generated types, one per event, with the same field.
        let target_path = match event.data {
            EventData::FsAddFolder(d) => d.target_path,
            EventData::FsDeleteFolder(d) => d.target_path,
            EventData::FsDeleteFromTrash(d) => d.target_path,
            EventData::FsFolderProjectActivity(d) => d.target_path,
            other => panic!("{other:?}"),
        };
        assert_eq!(target_path, "/Projects/X");
    }
}

#[test]
fn fs_copy_file_is_typed() {
    let event = parse_event(
        "fs:copy_file",
        json!({"sourcePath": "/A/b", "targetPath": "/C/b", "targetEntryId": "e2",
               "targetGroupId": "g2", "targetFileChecksum": "c2"}),
    );
    let EventData::FsCopyFile(d) = event.data else {
        panic!()
    };
    assert_eq!(d.source_path, "/A/b");
    assert_eq!(d.target_path, "/C/b");
    assert_eq!(d.target_entry_id, "e2");
    assert_eq!(d.target_group_id, "g2");
    assert_eq!(d.target_file_checksum, "c2");
}

#[test]
fn fs_copy_and_move_folder_are_typed() {
    let data = json!({"sourcePath": "/A", "targetPath": "/B"});
    let EventData::FsCopyFolder(d) = parse_event("fs:copy_folder", data.clone()).data else {
        panic!()
    };
    assert_eq!(
        (d.source_path.as_str(), d.target_path.as_str()),
        ("/A", "/B")
    );
    let EventData::FsMoveFolder(d) = parse_event("fs:move_folder", data).data else {
        panic!()
    };
    assert_eq!(
        (d.source_path.as_str(), d.target_path.as_str()),
        ("/A", "/B")
    );
}

#[test]
fn fs_move_file_is_typed() {
    let event = parse_event(
        "fs:move_file",
        json!({"sourcePath": "/A/old", "targetPath": "/A/new", "targetGroupId": "g3",
               "targetEntryId": "e3"}),
    );
    let EventData::FsMoveFile(d) = event.data else {
        panic!()
    };
    assert_eq!(d.source_path, "/A/old");
    assert_eq!(d.target_path, "/A/new");
    assert_eq!(d.target_group_id, "g3");
    assert_eq!(d.target_entry_id, "e3");
}

#[test]
fn fs_delete_file_is_typed_with_optional_item_type() {
    let with = parse_event(
        "fs:delete_file",
        json!({"targetGroupId": "g4", "targetEntryId": "e4", "targetPath": "/A/x",
               "targetFileChecksum": "c4", "itemType": "file"}),
    );
    let EventData::FsDeleteFile(d) = with.data else {
        panic!()
    };
    assert_eq!(d.target_group_id, "g4");
    assert_eq!(d.target_entry_id, "e4");
    assert_eq!(d.target_path, "/A/x");
    assert_eq!(d.target_file_checksum, "c4");
    assert_eq!(d.item_type, Some(ItemType::File));

    let without = parse_event(
        "fs:delete_file",
        json!({"targetGroupId": "g4", "targetEntryId": "e4", "targetPath": "/A/x",
               "targetFileChecksum": "c4"}),
    );
    let EventData::FsDeleteFile(d) = without.data else {
        panic!()
    };
    assert_eq!(d.item_type, None);
}

#[test]
fn fs_restore_from_trash_is_typed_for_folders_and_files() {
    let folder = parse_event(
        "fs:restore_from_trash",
        json!({"targetPath": "/A", "isFolder": true}),
    );
    let EventData::FsRestoreFromTrash(d) = folder.data else {
        panic!()
    };
    assert!(d.is_folder);
    assert_eq!(d.target_path, "/A");
    assert_eq!(d.target_entry_id, None);

    let file = parse_event(
        "fs:restore_from_trash",
        json!({"targetPath": "/A/f", "isFolder": false, "targetEntryId": "e5",
               "targetGroupId": "g5", "targetFileChecksum": "c5", "itemType": "file"}),
    );
    let EventData::FsRestoreFromTrash(d) = file.data else {
        panic!()
    };
    assert!(!d.is_folder);
    assert_eq!(d.target_entry_id.as_deref(), Some("e5"));
    assert_eq!(d.target_group_id.as_deref(), Some("g5"));
    assert_eq!(d.target_file_checksum.as_deref(), Some("c5"));
    assert_eq!(d.item_type, Some(ItemType::File));
}

#[test]
fn fs_lock_and_unlock_file_are_typed() {
    let data = json!({"targetEntryId": "e6", "targetGroupId": "g6",
                      "targetFileChecksum": "c6", "targetPath": "/A/l"});
    for name in ["fs:lock_file", "fs:unlock_file"] {
        let d = match parse_event(name, data.clone()).data {
            EventData::FsLockFile(d) | EventData::FsUnlockFile(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(d.target_entry_id, "e6");
        assert_eq!(d.target_group_id, "g6");
        assert_eq!(d.target_file_checksum, "c6");
        assert_eq!(d.target_path, "/A/l");
    }
}

#[test]
fn fs_upload_link_is_typed() {
    let event = parse_event(
        "fs:upload_link",
        json!({"uploadLinkUrl": "https://x/u/1", "filePath": "/In/f", "fileChecksum": "c7",
               "fileGroupId": "g7", "fileEntryId": "e7"}),
    );
    let EventData::FsUploadLink(d) = event.data else {
        panic!()
    };
    assert_eq!(d.upload_link_url, "https://x/u/1");
    assert_eq!(d.file_path, "/In/f");
    assert_eq!(d.file_checksum, "c7");
    assert_eq!(d.file_group_id, "g7");
    assert_eq!(d.file_entry_id, "e7");
}

#[test]
fn link_create_and_delete_have_no_fields_and_keep_any() {
    let EventData::LinkCreate(d) = parse_event("link:create", json!({})).data else {
        panic!()
    };
    assert!(d.is_empty());
    let EventData::LinkDelete(d) = parse_event("link:delete", json!({"linkId": "l1"})).data else {
        panic!()
    };
    assert_eq!(d["linkId"], "l1");
}

#[test]
fn download_and_upload_link_events_are_typed() {
    for (name, link_type) in [
        ("link:create_download_link", "file"),
        ("link:delete_download_link", "folder"),
        ("link:create_upload_link", "upload"),
        ("link:delete_upload_link", "upload"),
    ] {
        let event = parse_event(
            name,
            json!({"sourcePath": "/S", "linkId": "l2", "linkType": link_type,
                   "linkURL": "https://x/l/2"}),
        );
        // Download and upload links are two generated types with the same fields.
        let (source_path, link_id, kind, link_url) = match event.data {
            EventData::LinkCreateDownloadLink(d) | EventData::LinkDeleteDownloadLink(d) => {
                (d.source_path, d.link_id, d.link_type, d.link_url)
            }
            EventData::LinkCreateUploadLink(d) | EventData::LinkDeleteUploadLink(d) => {
                (d.source_path, d.link_id, d.link_type, d.link_url)
            }
            other => panic!("{other:?}"),
        };
        assert_eq!(source_path, "/S");
        assert_eq!(link_id, "l2");
        assert_eq!(kind, LinkType::from(link_type));
        assert!(kind.is_known());
        assert_eq!(link_url, "https://x/l/2");
    }
}

#[test]
fn comment_events_are_typed() {
    let EventData::CommentSetComment(d) = parse_event(
        "comment:set_comment",
        json!({"targetPath": "/A/f", "comment": "LGTM"}),
    )
    .data
    else {
        panic!()
    };
    assert_eq!(
        (d.target_path.as_str(), d.comment.as_str()),
        ("/A/f", "LGTM")
    );

    let EventData::CommentRemoveComment(d) =
        parse_event("comment:remove_comment", json!({"targetPath": "/A/f"})).data
    else {
        panic!()
    };
    assert_eq!(d.target_path, "/A/f");
    assert_eq!(d.comment, None);
}

#[test]
fn permission_change_is_typed_with_nullable_fields() {
    let full = parse_event(
        "permission:permission_change",
        json!({"folderPath": "/P", "newPrivilege": "editor", "oldPrivilege": "viewer",
               "assignerId": 7, "assignee": "bob", "assigneeId": 8, "assigner": "ada",
               "groupName": "Team"}),
    );
    let EventData::PermissionPermissionChange(d) = full.data else {
        panic!()
    };
    assert_eq!(d.folder_path, "/P");
    assert_eq!(d.new_privilege, "editor");
    assert_eq!(d.old_privilege, "viewer");
    // Ids whose JSON type the reference does not show stay JSON.
    assert_eq!(d.assigner_id, json!(7));
    assert_eq!(d.assignee.as_deref(), Some("bob"));
    assert_eq!(d.assignee_id, Some(json!(8)));
    assert_eq!(d.assigner.as_deref(), Some("ada"));
    assert_eq!(d.group_name.as_deref(), Some("Team"));

    let nulls = parse_event(
        "permission:permission_change",
        json!({"folderPath": "/P", "newPrivilege": "none", "oldPrivilege": "viewer",
               "assignerId": "7", "assignee": null, "assigneeId": null, "assigner": null,
               "groupName": null}),
    );
    let EventData::PermissionPermissionChange(d) = nulls.data else {
        panic!()
    };
    assert_eq!(d.assigner_id, "7");
    assert_eq!(
        (d.assignee, d.assignee_id, d.assigner, d.group_name),
        (None, None, None, None)
    );
}

#[test]
fn metadata_key_events_are_typed() {
    for name in ["meta:add_metadata_key", "meta:delete_metadata_key"] {
        let event = parse_event(
            name,
            json!({"targetPath": "/A/f", "targetGroupId": "g8", "namespace": "ns",
                   "key": "k"}),
        );
        let d = match event.data {
            EventData::MetaAddMetadataKey(d) | EventData::MetaDeleteMetadataKey(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(d.target_path, "/A/f");
        assert_eq!(d.target_group_id, "g8");
        assert_eq!(d.namespace, "ns");
        assert_eq!(d.key, "k");
    }
}

fn group_common() -> serde_json::Map<String, Value> {
    let Value::Object(map) = json!({
        "user": {"id": 9, "fullName": "Ada Lovelace", "userName": "ada", "email": "ada@x"},
        "groupName": "Finance", "groupId": "g-1"
    }) else {
        unreachable!()
    };
    map
}

fn with(mut base: serde_json::Map<String, Value>, extra: Value) -> Value {
    if let Value::Object(extra) = extra {
        base.extend(extra);
    }
    Value::Object(base)
}

#[test]
fn group_events_are_typed_with_user_name_and_id() {
    let event = parse_event(
        "group:create",
        with(
            group_common(),
            json!({"members": ["bob", "eve"], "owner": "ada"}),
        ),
    );
    let EventData::GroupCreate(d) = event.data else {
        panic!()
    };
    assert_eq!(d.user.id, json!(9));
    assert_eq!(d.user.full_name, "Ada Lovelace");
    assert_eq!(d.user.user_name, "ada");
    assert_eq!(d.user.email, "ada@x");
    assert_eq!(d.group_name, "Finance");
    assert_eq!(d.group_id, "g-1");
    assert_eq!(d.members, vec![json!("bob"), json!("eve")]);
    assert_eq!(d.owner, json!("ada"));

    for name in ["group:delete", "group:rename"] {
        let d = match parse_event(name, with(group_common(), json!({}))).data {
            EventData::GroupDelete(d) | EventData::GroupRename(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (d.group_name.as_str(), &d.group_id),
            ("Finance", &json!("g-1"))
        );
    }
    for name in ["group:add_members", "group:remove_members"] {
        let d = match parse_event(name, with(group_common(), json!({"members": [{"id": 3}]}))).data
        {
            EventData::GroupAddMembers(d) | EventData::GroupRemoveMembers(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(d.members, vec![json!({"id": 3})]);
        assert_eq!(d.user.user_name, "ada");
    }
    for name in ["group:add_owner", "group:remove_owner"] {
        let d = match parse_event(name, with(group_common(), json!({"owner": "bob"}))).data {
            EventData::GroupAddOwner(d) | EventData::GroupRemoveOwner(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(d.owner, json!("bob"));
        assert_eq!(d.group_id, "g-1");
    }
}

fn workflow_common(template: bool) -> serde_json::Map<String, Value> {
    let mut workflow = json!({"id": "wf-1", "name": "Approve", "displayId": 12,
                              "type": "approval", "actionStatus": "ACTIVE"});
    if template {
        workflow["templateId"] = json!("tpl-1");
    }
    let Value::Object(map) = json!({
        "workflow": workflow,
        "firstEntity": {"type": "file", "filePath": "/A/f", "entryID": "e9", "groupID": "g9"}
    }) else {
        unreachable!()
    };
    map
}

#[test]
fn workflow_created_is_typed_with_free_form_definition() {
    let event = parse_event(
        "workflow:created",
        with(
            workflow_common(true),
            json!({"definitionJson": "{\"steps\":[]}"}),
        ),
    );
    let EventData::WorkflowCreated(d) = event.data else {
        panic!()
    };
    assert_eq!(d.workflow.id, "wf-1");
    assert_eq!(d.workflow.name, "Approve");
    assert_eq!(d.workflow.display_id, json!(12));
    assert_eq!(d.workflow.type_, "approval");
    assert_eq!(d.workflow.action_status, "ACTIVE");
    assert_eq!(d.workflow.template_id, Some(json!("tpl-1")));
    assert_eq!(d.first_entity.type_, "file");
    assert_eq!(d.first_entity.file_path, "/A/f");
    assert_eq!(d.first_entity.entry_id, "e9");
    assert_eq!(d.first_entity.group_id, "g9");
    assert_eq!(d.definition_json, json!("{\"steps\":[]}"));
}

#[test]
fn workflow_completed_is_typed() {
    let event = parse_event(
        "workflow:completed",
        with(
            workflow_common(false),
            json!({"completionStatusCode": 0, "totalNumberOfSteps": 3,
                   "completionDate": 1_714_000_000_000_i64}),
        ),
    );
    let EventData::WorkflowCompleted(d) = event.data else {
        panic!()
    };
    assert_eq!(d.workflow.template_id, None);
    assert_eq!(d.completion_status_code, json!(0));
    assert_eq!(d.total_number_of_steps, 3);
    assert_eq!(d.completion_date, json!(1_714_000_000_000_i64));
}

#[test]
fn workflow_approval_task_events_are_typed() {
    for name in [
        "workflow:approvaltask_approved",
        "workflow:approvaltask_rejected",
    ] {
        let event = parse_event(
            name,
            with(
                workflow_common(true),
                json!({"step": {"id": 2, "name": "Legal", "type": "approval"},
                       "assignee": {"id": 5, "displayName": "Bob", "username": "bob",
                                    "email": "bob@x"},
                       "totalNumberOfSteps": 3, "completionDate": "2024-04-25T10:00:00Z",
                       "creationDate": "2024-04-24T10:00:00Z"}),
            ),
        );
        let d = match event.data {
            EventData::WorkflowApprovaltaskApproved(d)
            | EventData::WorkflowApprovaltaskRejected(d) => d,
            other => panic!("{other:?}"),
        };
        assert_eq!(d.step.id, json!(2));
        assert_eq!(d.step.name, "Legal");
        assert_eq!(d.step.type_, "approval");
        assert_eq!(d.assignee.id, json!(5));
        assert_eq!(d.assignee.display_name, "Bob");
        assert_eq!(d.assignee.username, "bob");
        assert_eq!(d.assignee.email, "bob@x");
        assert_eq!(d.total_number_of_steps, 3);
        assert_eq!(d.completion_date, json!("2024-04-25T10:00:00Z"));
        assert_eq!(d.creation_date, json!("2024-04-24T10:00:00Z"));
        assert_eq!(d.first_entity.entry_id, "e9");
    }
}

#[test]
fn every_event_type_sample_parses_into_its_variant_and_serializes_back_unchanged() {
    for event_type in &testing::all_event_types() {
        let mut element = testing::sample_event(event_type, "evt-1");
        let event: WebhookEvent = serde_json::from_value(element.clone()).unwrap();
        // A nullable field the generated type makes optional (`groupName: null`) is written
        // back absent, which reads the same.
        if let Some(data) = element["data"].as_object_mut() {
            data.retain(|_, value| !value.is_null());
        }
        assert!(!event.data.is_unknown(), "{event_type}");
        assert_eq!(&event.data.event_type(), event_type);
        assert_eq!(
            serde_json::to_value(&event.data).unwrap(),
            element["data"],
            "{event_type}"
        );
        assert_eq!(
            serde_json::to_value(&event).unwrap(),
            element,
            "{event_type}"
        );
    }
}

#[test]
fn unknown_event_type_keeps_raw_data() {
    let body = json!({"data": [{
        "eventId": "e", "domain": "d", "timestamp": 1, "actionSource": "x",
        "user": {"id": 1, "displayName": "A", "username": "a", "email": "a@x"},
        "eventType": "user:create", "webhookId": "w", "data": {"userName": "new"}
    }]});
    let delivery = Delivery::parse(body.to_string().as_bytes()).unwrap();
    let event = delivery.events().next().unwrap();
    assert_eq!(event.event_type, EventType::Unknown("user:create".into()));
    assert_eq!(
        event.data,
        EventData::Unknown {
            event_type: EventType::Unknown("user:create".into()),
            data: json!({"userName": "new"})
        }
    );
    // Written back as received.
    assert_eq!(
        serde_json::to_value(event).unwrap()["data"],
        json!({"userName": "new"})
    );
}

#[test]
fn known_event_type_with_mismatched_data_is_unknown_not_an_error() {
    let body = json!({"data": [{
        "eventId": "e", "domain": "d", "timestamp": 1, "actionSource": "x",
        "user": {"id": 1, "displayName": "A", "username": "a", "email": "a@x"},
        "eventType": "fs:add_file", "webhookId": "w", "data": {"targetPath": 5}
    }]});
    let delivery = Delivery::parse(body.to_string().as_bytes()).unwrap();
    let event = delivery.events().next().unwrap();
    assert_eq!(
        event.data,
        EventData::Unknown {
            event_type: EventType::FsAddFile,
            data: json!({"targetPath": 5})
        }
    );
}

#[test]
fn extra_fields_are_kept_at_every_level() {
    let body = json!({"data": [{
        "eventId": "e", "domain": "d", "timestamp": 1, "actionSource": "x",
        "user": {"id": 1, "displayName": "A", "username": "a", "email": "a@x", "locale": "fr"},
        "eventType": "fs:move_folder", "webhookId": "w", "region": "eu",
        "data": {"sourcePath": "/a", "targetPath": "/b", "reason": "cleanup"}
    }], "deliveryAttempt": 2});
    let delivery = Delivery::parse(body.to_string().as_bytes()).unwrap();
    let event = delivery.events().next().unwrap();
    assert_eq!(event.extra["region"], "eu");
    assert_eq!(event.user.extra["locale"], "fr");
    let EventData::FsMoveFolder(d) = &event.data else {
        panic!()
    };
    assert_eq!(d.extra["reason"], "cleanup");
}

#[test]
fn unknown_enum_values_in_data_are_kept() {
    let event = parse_event(
        "fs:add_file",
        json!({"targetEntryId": "e", "targetGroupId": "g", "targetFileChecksum": "c",
               "targetPath": "/p", "itemType": "shortcut"}),
    );
    let EventData::FsAddFile(d) = event.data else {
        panic!()
    };
    assert_eq!(d.item_type, ItemType::Unknown("shortcut".into()));
}

#[test]
fn malformed_elements_do_not_fail_the_batch() {
    let good = testing::sample_event(&EventType::LinkCreate, "ok");
    let body = json!({"data": [1, {"eventId": "no-rest"}, good, null]});
    let delivery = Delivery::parse(body.to_string().as_bytes()).unwrap();
    assert_eq!(delivery.items.len(), 4);
    assert_eq!(delivery.events().count(), 1);
    let DeliveryItem::Malformed { raw, reason } = &delivery.items[1] else {
        panic!()
    };
    assert_eq!(raw, &json!({"eventId": "no-rest"}));
    assert!(reason.contains("missing field"), "{reason}");
}

#[test]
fn body_without_data_array_or_json_is_a_parse_error() {
    use crate::webhook::DeliveryParseError;
    assert!(matches!(
        Delivery::parse(b"not json"),
        Err(DeliveryParseError::NotJson(_))
    ));
    assert!(matches!(
        Delivery::parse(b"{}"),
        Err(DeliveryParseError::NoDataArray)
    ));
    assert!(matches!(
        Delivery::parse(br#"{"data": {}}"#),
        Err(DeliveryParseError::NoDataArray)
    ));
    assert!(matches!(
        Delivery::parse(b"[]"),
        Err(DeliveryParseError::NoDataArray)
    ));
    assert_eq!(Delivery::parse(br#"{"data": []}"#).unwrap().items.len(), 0);
}

#[test]
fn absent_data_is_accepted_for_events_without_fields() {
    let mut element = testing::sample_event(&EventType::LinkDelete, "e");
    element.as_object_mut().unwrap().remove("data");
    let event: WebhookEvent = serde_json::from_value(element).unwrap();
    assert!(matches!(event.data, EventData::LinkDelete(_)));
}
