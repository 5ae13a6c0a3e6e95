//! The test API that makes things happen in the sandbox: file system changes, notes,
//! permission changes, logins and raw webhook events. Each call updates the file system and
//! feeds the events stream, the audit records and the webhook deliveries, as the platform
//! would.
//!
//! ```no_run
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! use pubapi_sandbox::{Sandbox, SandboxConfig};
//!
//! let sandbox = Sandbox::start(SandboxConfig::testing()).await;
//! let sam = sandbox.activity_as("sam");
//! sam.create_folder("/Projects")?;
//! sam.create_file("/Projects/plan.txt", "Ship the sandbox.")?;
//! sandbox.activity().impersonated_by("admin").delete("/Projects/plan.txt")?;
//! # Ok(()) }
//! ```

use super::Shared;
use super::dates::iso_seconds;
use super::fs::{ActivityError, FsEntry, normalize};
use super::world::{ActionSource, Actor, Happening, Polling, World};
use serde_json::{Value, json};
use std::fmt;
use std::sync::Arc;

/// Makes things happen as one user; get one from
/// [`Sandbox::activity_as`](super::Sandbox::activity_as).
#[derive(Clone)]
pub struct Activity {
    shared: Arc<Shared>,
    username: String,
    impersonated_by: Option<String>,
    source: ActionSource,
}

impl fmt::Debug for Activity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Activity")
            .field("username", &self.username)
            .field("impersonated_by", &self.impersonated_by)
            .field("source", &self.source)
            .finish()
    }
}

fn file_audit(actor: &Actor, entry: &FsEntry, transaction: &str, now: i64) -> Value {
    let mut event = json!({
        "username": actor.user.username,
        "user_id": actor.user.id,
        "target_path": entry.path,
        "transaction": transaction,
        "access": "Web",
        "time": iso_seconds(now),
        "ipAddress": "127.0.0.1",
    });
    if entry.is_folder {
        event["folder"] = json!(entry.name());
    } else {
        event["file"] = json!(entry.name());
        event["file_checksum"] = json!(entry.checksum);
    }
    event
}

/// What a move or copy of `source` to `entry` causes: the webhook event `name` with `data`
/// (filtered on both paths), a `file_system` polling event and a files audit record.
fn relocation(
    actor: &Actor,
    action: &'static str,
    (name, data): (&str, Value),
    entry: &FsEntry,
    source: &FsEntry,
    now: i64,
) -> Happening {
    let paths = vec![entry.path.clone(), source.path.clone()];
    Happening {
        actor: actor.clone(),
        custom_properties: None,
        webhook: Some((name.into(), data, paths.clone())),
        polling: Some(Polling {
            kind: "file_system",
            action,
            data: fs_data(entry, Some(source)),
            attributes: None,
            paths,
        }),
        audit: Some(("files", file_audit(actor, entry, action, now))),
    }
}

/// What only adds an audit record of `kind` (no webhook, no polling event).
fn audit_only(actor: &Actor, kind: &'static str, event: Value) -> Happening {
    Happening {
        actor: actor.clone(),
        custom_properties: None,
        webhook: None,
        polling: None,
        audit: Some((kind, event)),
    }
}

/// The entry at `path` (normalised), or `NotFound`.
fn entry_at(world: &World, path: &str) -> Result<FsEntry, ActivityError> {
    let path = normalize(path)?;
    world
        .fs
        .get(&path)
        .cloned()
        .ok_or(ActivityError::NotFound(path))
}

/// The folder at `path` (normalised): `NotFound`, or `WrongKind` for a file.
fn folder_at(world: &World, path: &str) -> Result<FsEntry, ActivityError> {
    let entry = entry_at(world, path)?;
    if entry.is_folder {
        Ok(entry)
    } else {
        Err(ActivityError::WrongKind(normalize(path)?))
    }
}

/// A change of `subject`'s permission from `old` to `new`: as the polling event's
/// `changedPermissions`, and as the audit record's `change` (`+new`, `old >> new`, `-old`).
fn permission_change(subject: &str, old: Option<&str>, new: Option<&str>) -> (Vec<Value>, String) {
    let mut changed = Vec::new();
    if let Some(old) = old {
        changed.push(json!({ "action": "DELETE", "entry": { "subject": subject, "priv": old } }));
    }
    if let Some(new) = new {
        changed.push(json!({ "action": "ADD", "entry": { "subject": subject, "priv": new } }));
    }
    let change = match (old, new) {
        (None, Some(n)) => format!("+{n}"),
        (Some(o), Some(n)) => format!("{o} >> {n}"),
        (Some(o), None) => format!("-{o}"),
        (None, None) => String::new(),
    };
    (changed, change)
}

/// What a change of one `entry` causes: the webhook event `name` with `data` (filtered on
/// its path), a `file_system` polling event `action` and a files audit record
/// `audit_action`.
fn file_change(
    actor: &Actor,
    (action, audit_action): (&'static str, &str),
    (name, data): (&str, Value),
    entry: &FsEntry,
    now: i64,
) -> Happening {
    Happening {
        actor: actor.clone(),
        custom_properties: None,
        webhook: Some((name.into(), data, vec![entry.path.clone()])),
        polling: Some(Polling {
            kind: "file_system",
            action,
            data: fs_data(entry, None),
            attributes: None,
            paths: vec![entry.path.clone()],
        }),
        audit: Some(("files", file_audit(actor, entry, audit_action, now))),
    }
}

fn fs_data(entry: &FsEntry, source: Option<&FsEntry>) -> Value {
    let mut data = json!({
        "target_path": entry.path,
        "target_id": entry.entry_id,
        "target_group_id": entry.group_id,
        "is_folder": entry.is_folder,
    });
    if let Some(source) = source {
        data["source_path"] = json!(source.path);
        data["source_id"] = json!(source.entry_id);
        data["source_group_id"] = json!(source.group_id);
    }
    data
}

impl Activity {
    pub(crate) fn new(shared: Arc<Shared>, username: &str) -> Self {
        Activity {
            shared,
            username: username.to_string(),
            impersonated_by: None,
            source: ActionSource::WebUi,
        }
    }

    /// The same actor, acting through an admin's impersonation (`impersonatedBy` in
    /// deliveries; the admin's client id).
    pub fn impersonated_by(mut self, admin: &str) -> Self {
        self.impersonated_by = Some(admin.to_string());
        self
    }

    /// The same actor through another client (`action_source`; WebUI by default).
    pub fn via(mut self, source: ActionSource) -> Self {
        self.source = source;
        self
    }

    fn actor(&self, world: &World) -> Result<Actor, ActivityError> {
        let user = world
            .users
            .by_username(&self.username)
            .cloned()
            .ok_or_else(|| ActivityError::UnknownUser(self.username.clone()))?;
        let client_id = match &self.impersonated_by {
            Some(admin) => world
                .users
                .by_username(admin)
                .map(|a| a.client_id.clone())
                .ok_or_else(|| ActivityError::UnknownUser(admin.clone()))?,
            None => user.client_id.clone(),
        };
        Ok(Actor {
            user,
            client_id,
            impersonated_by: self.impersonated_by.clone(),
            source: self.source,
        })
    }

    /// Runs `change` on the world and records what it returns.
    fn happen<T>(
        &self,
        change: impl FnOnce(&mut World, &Actor, i64) -> Result<(T, Happening), ActivityError>,
    ) -> Result<T, ActivityError> {
        let now = self.shared.now();
        let result = {
            let mut world = self.shared.world();
            let actor = self.actor(&world)?;
            let (value, happening) = change(&mut world, &actor, now)?;
            world.happen(happening, now, &self.shared.config);
            value
        };
        self.shared.wakeup.notify_one();
        Ok(result)
    }

    /// Creates a folder (`fs:add_folder`, a `create` event).
    pub fn create_folder(&self, path: &str) -> Result<FsEntry, ActivityError> {
        self.happen(|world, actor, now| {
            let entry = world
                .fs
                .create_folder(path, (now, actor.user.id), &mut world.ids)?;
            let data = json!({ "targetPath": entry.path });
            let happening = file_change(
                actor,
                ("create", "create_folder"),
                ("fs:add_folder", data),
                &entry,
                now,
            );
            Ok((entry, happening))
        })
    }

    /// Uploads a file, or a new version when it exists (`fs:add_file` with `itemType`
    /// `file` or `version`). Text content makes it part of the AI corpus.
    pub fn create_file(&self, path: &str, content: &str) -> Result<FsEntry, ActivityError> {
        self.happen(|world, actor, now| {
            let (entry, is_version) =
                world
                    .fs
                    .write_file(path, content, (now, actor.user.id), &mut world.ids)?;
            let data = json!({
                "targetEntryId": entry.entry_id,
                "targetGroupId": entry.group_id,
                "targetFileChecksum": entry.checksum,
                "targetPath": entry.path,
                "itemType": if is_version { "version" } else { "file" },
            });
            let mut happening = file_change(
                actor,
                ("create", "upload"),
                ("fs:add_file", data),
                &entry,
                now,
            );
            // A new version of a file is marked as an update (reference 2.10).
            happening.custom_properties = is_version.then(|| json!({ "fileUpdated": true }));
            Ok((entry, happening))
        })
    }

    /// Moves or renames a file or folder (`fs:move_file` / `fs:move_folder`, a `move`
    /// event).
    pub fn move_entry(&self, from: &str, to: &str) -> Result<FsEntry, ActivityError> {
        self.relocate("move", from, |world, _actor, now| {
            world.fs.move_entry(from, to, now)
        })
    }

    /// Copies a file or folder (`fs:copy_file` / `fs:copy_folder`, a `copy` event).
    pub fn copy_entry(&self, from: &str, to: &str) -> Result<FsEntry, ActivityError> {
        self.relocate("copy", from, |world, actor, now| {
            world
                .fs
                .copy_entry(from, to, (now, actor.user.id), &mut world.ids)
        })
    }

    /// Moves or copies (`action`) the entry at `from` with `relocate`, and records the
    /// `fs:<action>_file` or `fs:<action>_folder` event: the source and target paths, and
    /// for a file the target's ids (and, for a copy, the new file's checksum).
    fn relocate(
        &self,
        action: &'static str,
        from: &str,
        relocate: impl FnOnce(&mut World, &Actor, i64) -> Result<FsEntry, ActivityError>,
    ) -> Result<FsEntry, ActivityError> {
        self.happen(|world, actor, now| {
            let source = world
                .fs
                .get(&normalize(from)?)
                .cloned()
                .ok_or_else(|| ActivityError::NotFound(from.to_string()))?;
            let entry = relocate(world, actor, now)?;
            let mut data = json!({ "sourcePath": source.path, "targetPath": entry.path });
            if !entry.is_folder {
                data["targetGroupId"] = json!(entry.group_id);
                data["targetEntryId"] = json!(entry.entry_id);
                if action == "copy" {
                    data["targetFileChecksum"] = json!(entry.checksum);
                }
            }
            let item = if entry.is_folder { "folder" } else { "file" };
            let name = format!("fs:{action}_{item}");
            let happening = relocation(actor, action, (&name, data), &entry, &source, now);
            Ok((entry, happening))
        })
    }

    /// Moves a file or folder to the trash (`fs:delete_file` / `fs:delete_folder`, a
    /// `delete` event).
    pub fn delete(&self, path: &str) -> Result<FsEntry, ActivityError> {
        self.happen(|world, actor, now| {
            let entry = world.fs.delete(path)?;
            let (name, data) = if entry.is_folder {
                ("fs:delete_folder", json!({ "targetPath": entry.path }))
            } else {
                (
                    "fs:delete_file",
                    json!({
                        "targetGroupId": entry.group_id,
                        "targetEntryId": entry.entry_id,
                        "targetPath": entry.path,
                        "targetFileChecksum": entry.checksum,
                        "itemType": "file",
                    }),
                )
            };
            let happening = file_change(actor, ("delete", "delete"), (name, data), &entry, now);
            Ok((entry, happening))
        })
    }

    /// Restores a file or folder from the trash (`fs:restore_from_trash`, a `restore`
    /// event).
    pub fn restore(&self, path: &str) -> Result<FsEntry, ActivityError> {
        self.happen(|world, actor, now| {
            let entry = world.fs.restore(path)?;
            let mut data = json!({ "targetPath": entry.path, "isFolder": entry.is_folder });
            if !entry.is_folder {
                data["targetEntryId"] = json!(entry.entry_id);
                data["targetGroupId"] = json!(entry.group_id);
                data["targetFileChecksum"] = json!(entry.checksum);
                data["itemType"] = json!("file");
            }
            let happening = file_change(
                actor,
                ("restore", "restore_trash"),
                ("fs:restore_from_trash", data),
                &entry,
                now,
            );
            Ok((entry, happening))
        })
    }

    /// Activity in a project folder (`fs:folder_project_activity`, no polling event): the
    /// delivery carries `customProperties` with the project's id (`PROJECT_ID`), the
    /// project's root folder (`PROJECT_ROOT_FOLDER_ID`, the folder's group id) and what was
    /// done (`FOLDER_PROJECT_ACTIVITY_ACTION_INFO`), the keys reference 2.10 lists (their
    /// value types are not shown; the sandbox sends strings).
    pub fn folder_project_activity(
        &self,
        folder: &str,
        project_id: &str,
        action_info: &str,
    ) -> Result<(), ActivityError> {
        self.happen(|world, actor, _now| {
            let entry = folder_at(world, folder)?;
            let happening = Happening {
                actor: actor.clone(),
                custom_properties: Some(json!({
                    "PROJECT_ID": project_id,
                    "PROJECT_ROOT_FOLDER_ID": entry.group_id,
                    "FOLDER_PROJECT_ACTIVITY_ACTION_INFO": action_info,
                })),
                webhook: Some((
                    "fs:folder_project_activity".into(),
                    json!({ "targetPath": entry.path }),
                    vec![entry.path.clone()],
                )),
                polling: None,
                audit: None,
            };
            Ok(((), happening))
        })
    }

    /// Adds a note (comment) to a file or folder (`comment:set_comment`, a `note` event).
    pub fn add_note(&self, path: &str, text: &str) -> Result<(), ActivityError> {
        self.happen(|world, actor, _now| {
            let entry = entry_at(world, path)?;
            let happening = Happening {
                actor: actor.clone(),
                custom_properties: None,
                webhook: Some((
                    "comment:set_comment".into(),
                    json!({ "targetPath": entry.path, "comment": text }),
                    vec![entry.path.clone()],
                )),
                polling: Some(Polling {
                    kind: "note",
                    action: "create",
                    data: json!({ "target_path": entry.path, "target_group_id": entry.group_id, "text": text }),
                    attributes: None,
                    paths: vec![entry.path.clone()],
                }),
                audit: None,
            };
            Ok(((), happening))
        })
    }

    /// Changes the permission of `assignee` (a username, or else a group name) on `folder`
    /// from `old` to `new` (`None`: no permission): `permission:permission_change`, a
    /// `permission_change` event (v2) and a permissions audit record.
    pub fn change_permission(
        &self,
        folder: &str,
        assignee: &str,
        old: Option<&str>,
        new: Option<&str>,
    ) -> Result<(), ActivityError> {
        self.happen(|world, actor, now| {
            let entry = folder_at(world, folder)?;
            let user = world.users.by_username(assignee).cloned();
            let subject = match &user {
                Some(u) => format!("user:{}", u.username),
                None => format!("group:{assignee}"),
            };
            let (changed, change) = permission_change(&subject, old, new);
            let (assignee_name, assignee_id, group) = match &user {
                Some(u) => (json!(u.username), json!(u.id), Value::Null),
                None => (Value::Null, Value::Null, json!(assignee)),
            };
            let happening = Happening {
                actor: actor.clone(),
                custom_properties: None,
                webhook: Some((
                    "permission:permission_change".into(),
                    json!({
                        "folderPath": entry.path,
                        "newPrivilege": new.unwrap_or(""),
                        "oldPrivilege": old.unwrap_or(""),
                        "assignerId": actor.user.id,
                        "assignee": assignee_name,
                        "assigneeId": assignee_id,
                        "assigner": actor.user.username,
                        "groupName": group,
                    }),
                    vec![entry.path.clone()],
                )),
                polling: Some(Polling {
                    kind: "permission_change",
                    action: "permission_change",
                    data: json!({ "target_path": entry.path, "is_folder": false }),
                    attributes: Some(json!({
                        "changeGroupEvents": [],
                        "changePermissionEvent": { "changedPermissions": changed },
                        "changeContext": null,
                        "targetFolderId": entry.group_id,
                        "groupChange": false,
                    })),
                    paths: vec![entry.path.clone()],
                }),
                audit: Some((
                    "permissions",
                    json!({
                        "folder": entry.path,
                        "assignee": assignee,
                        "assignee_id": user.as_ref().map(|u| u.id),
                        "assigner": actor.user.username,
                        "assigner_id": actor.user.id,
                        "change": change,
                        "time": iso_seconds(now),
                    }),
                )),
            };
            Ok(((), happening))
        })
    }

    /// Records a login event of this user for logins reports (`event` is one of `logins`,
    /// `logouts`, `account_lockouts`, `password_resets`, `failed_attempts`; `access` one of
    /// `Web`, `FTP`, `Mobile`).
    pub fn login(&self, event: &str, ip_address: &str, access: &str) -> Result<(), ActivityError> {
        self.happen(|_world, actor, now| {
            let record = json!({
                "username": actor.user.username,
                "user_id": actor.user.id,
                "event": event,
                "ip_address": ip_address,
                "access": access,
                "time": iso_seconds(now),
            });
            Ok(((), audit_only(actor, "logins", record)))
        })
    }

    /// Sends any event of reference 6.2 to the matching webhooks, with `data` as given and
    /// `paths` for their path filters (no polling event, no audit record).
    pub fn emit(&self, event_type: &str, data: Value, paths: &[&str]) -> Result<(), ActivityError> {
        if !super::facts::event_types().contains(&event_type) {
            return Err(ActivityError::UnknownEventType(event_type.to_string()));
        }
        self.happen(|_world, actor, _now| {
            let happening = Happening {
                actor: actor.clone(),
                custom_properties: None,
                webhook: Some((
                    event_type.to_string(),
                    data,
                    paths.iter().map(|p| p.to_string()).collect(),
                )),
                polling: None,
                audit: None,
            };
            Ok(((), happening))
        })
    }

    /// Adds an audit record of any kind (`users`, `groups`, `workgroup-settings`, ...) with
    /// the event as reports should show it.
    pub fn record_audit(&self, kind: &str, event: Value) -> Result<(), ActivityError> {
        let Some(kind) = super::facts::audit_kinds()
            .iter()
            .copied()
            .find(|k| *k == kind)
        else {
            return Err(ActivityError::UnknownEventType(kind.to_string()));
        };
        self.happen(|_world, actor, _now| Ok(((), audit_only(actor, kind, event))))
    }
}
