//! The model of the Redis server the fleet's budget lives on: what `fleet::redis`'s
//! reservation script does to a token's sorted sets, its generation and the run id of the
//! server that set it, ported line by line from the script (`RESERVE` in
//! `src/fleet/redis.rs`), on the server's clock. Where a real run and this model disagree,
//! the model is wrong.
//!
//! Beside the script: `ZREM` (a start given back), what a restart, a flush or a failover to a
//! replica that lacks the last writes does to the data, and snapshots of the data for that
//! replica.

use std::collections::{BTreeMap, HashMap};

/// The arguments of one run of the script, as `RedisBudget::run` sends them.
#[derive(Debug, Clone)]
pub struct ScriptArgs {
    pub key: String,
    pub generation_key: String,
    pub server_key: String,
    pub reset_key: String,
    pub per_second: i64,
    pub per_minute: i64,
    pub per_day: i64,
    pub margin: i64,
    pub burst: bool,
    pub max_wait: i64,
    pub member: String,
    pub per_hour: i64,
    pub not_before: i64,
    pub deadline: i64,
    pub known: String,
    pub candidate: String,
    pub book: bool,
    pub nonce: String,
    pub quiet: i64,
    pub quiet_new: i64,
    /// The anchor and the (id, offset) pairs, when history came with the request.
    pub history: Option<(i64, Vec<(u64, i64)>)>,
}

/// What the script returns: status, wait, long wait (µs), generation, lost, the server's
/// clock when it ran (µs).
pub type Raw = (i64, i64, i64, String, i64, i64);

/// A sorted set: members by score, as Redis orders them (score, then member).
#[derive(Debug, Clone, Default)]
pub struct SortedSet {
    by_member: HashMap<String, i64>,
    ordered: BTreeMap<(i64, String), ()>,
}

impl SortedSet {
    fn add(&mut self, score: i64, member: &str) {
        if let Some(old) = self.by_member.insert(member.to_owned(), score) {
            self.ordered.remove(&(old, member.to_owned()));
        }
        self.ordered.insert((score, member.to_owned()), ());
    }

    fn remove(&mut self, member: &str) {
        if let Some(old) = self.by_member.remove(member) {
            self.ordered.remove(&(old, member.to_owned()));
        }
    }

    /// `ZREVRANGE key k k WITHSCORES`: the score of the (k+1)-th highest.
    fn rev_score(&self, k: usize) -> Option<i64> {
        self.ordered.keys().rev().nth(k).map(|(score, _)| *score)
    }

    /// `ZREMRANGEBYSCORE key -inf max`.
    fn remove_up_to(&mut self, max: i64) {
        let gone: Vec<(i64, String)> = self
            .ordered
            .keys()
            .take_while(|(score, _)| *score <= max)
            .cloned()
            .collect();
        for (score, member) in gone {
            self.ordered.remove(&(score, member.clone()));
            self.by_member.remove(&member);
        }
    }
}

/// The data of one server: sorted sets and strings (TTLs are left out: a run is shorter
/// than any of them).
#[derive(Debug, Clone, Default)]
pub struct Data {
    sets: HashMap<String, SortedSet>,
    strings: HashMap<String, String>,
    /// The keys of each event stream's checkpoint and lease, by stream name (see
    /// [`super::streams`]).
    pub streams: HashMap<String, super::streams::StreamKeys>,
}

/// One Redis server: its data and its run id (new at every start).
#[derive(Debug, Clone)]
pub struct Server {
    pub data: Data,
    pub run_id: String,
}

impl Server {
    pub fn new(run_id: String) -> Self {
        Server {
            data: Data::default(),
            run_id,
        }
    }

    /// `ZREM key member`.
    pub fn zrem(&mut self, key: &str, member: &str) {
        if let Some(set) = self.data.sets.get_mut(key) {
            set.remove(member);
        }
    }

    /// The script, at `now` (µs of the server's clock).
    pub fn reserve(&mut self, now: i64, a: &ScriptArgs) -> Raw {
        if a.deadline > 0 && now > a.deadline {
            return (-3, 0, 0, String::new(), 0, now);
        }
        let strings = &mut self.data.strings;
        let mut generation = strings.get(&a.generation_key).cloned();
        let served_by = strings.get(&a.server_key).cloned();
        let mut lost = 0;
        let moved = served_by.as_ref().is_some_and(|s| *s != self.run_id);
        let mut created = false;
        if generation.is_none() || moved {
            generation = Some(a.candidate.clone());
            created = true;
            strings.insert(a.generation_key.clone(), a.candidate.clone());
            if !a.known.is_empty() || moved {
                lost = 1;
            }
        } else if !a.known.is_empty() && Some(&a.known) != generation.as_ref() {
            lost = 1;
        }
        let generation = generation.unwrap_or_default();
        if served_by.as_ref() != Some(&self.run_id) {
            strings.insert(a.server_key.clone(), self.run_id.clone());
        }
        let mark = strings.get(&a.reset_key).and_then(|reset| {
            let (rest, l) = reset.rsplit_once('@')?;
            let (g, at) = rest.rsplit_once('@')?;
            (g == generation).then(|| Some((at.parse::<i64>().ok()?, l == "1")))?
        });
        let (mut reset_at, mut reset_lost) = match mark {
            Some((at, l)) => (Some(at), l),
            None => (None, false),
        };
        if created || (lost == 1 && !reset_lost) {
            let at = *reset_at.get_or_insert(now);
            reset_lost = reset_lost || lost == 1;
            strings.insert(
                a.reset_key.clone(),
                format!("{generation}@{at}@{}", u8::from(reset_lost)),
            );
        }
        if moved && a.known.is_empty() {
            lost = 0;
        }
        if (lost == 1 || a.known != generation) && a.history.is_none() {
            return (-4, 0, 0, generation, lost, now);
        }
        let mut horizon = 1_000_000;
        if a.per_minute >= 0 {
            horizon = 60_000_000;
        }
        if a.per_hour >= 0 {
            horizon = 3_600_000_000;
        }
        if a.per_day >= 0 {
            horizon = 86_400_000_000;
        }
        let set = self.data.sets.entry(a.key.clone()).or_default();
        if let Some((anchor, starts)) = &a.history {
            for (id, offset) in starts {
                let at = anchor + offset;
                if at > now - horizon - a.margin {
                    set.add(at, &format!("{}-{id}", a.nonce));
                }
            }
        }
        let tidy = |set: &mut SortedSet| set.remove_up_to(now - horizon - a.margin);
        if !a.book {
            tidy(set);
            return (0, 0, 0, generation, lost, now);
        }
        let mut slot = now;
        // `after_kth_latest`: false when the window allows nothing.
        let after_kth_latest = |k: i64, window: i64, slot: &mut i64| -> bool {
            if k < 0 {
                return true;
            }
            if k == 0 {
                return false;
            }
            if let Some(score) = set.rev_score(usize::try_from(k - 1).unwrap_or(usize::MAX)) {
                let s = score + window + a.margin;
                if s > *slot {
                    *slot = s;
                }
            }
            true
        };
        let no_budget = (-2, 0, 0, generation.clone(), lost, now);
        if !after_kth_latest(a.per_day, 86_400_000_000, &mut slot) {
            return no_budget;
        }
        if !after_kth_latest(a.per_hour, 3_600_000_000, &mut slot) {
            return no_budget;
        }
        if !after_kth_latest(a.per_minute, 60_000_000, &mut slot) {
            return no_budget;
        }
        if let Some(reset_at) = reset_at {
            let quiet_from = reset_at + if reset_lost { a.quiet } else { a.quiet_new };
            slot = slot.max(quiet_from);
        }
        let long = slot;
        if !after_kth_latest(a.per_second, 1_000_000, &mut slot) {
            return no_budget;
        }
        if let Some(l) = set.rev_score(0) {
            if a.per_second > 0 && !a.burst {
                let s = l + (1_000_000 + a.margin) / a.per_second;
                if s > slot {
                    slot = s;
                }
            }
            if l > slot {
                slot = l;
            }
        }
        if now + a.not_before > slot {
            slot = now + a.not_before;
        }
        if slot - now > a.max_wait {
            return (-1, slot - now, long - now, generation, lost, now);
        }
        set.add(slot, &a.member);
        tidy(set);
        (0, slot - now, long - now, generation, lost, now)
    }
}
