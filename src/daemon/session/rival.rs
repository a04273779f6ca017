//! Two referees on one build: a second `watch` with a state directory of its own is refused at
//! start ([`crate::state::live::rival`]), but two started at the same instant both pass that
//! look. Each then looks again at every heartbeat and whenever the STOP file is touched: the one
//! that started later yields (stops writing into the build, says why once, as a fault), the
//! other says once that it saw it. Neither restores files against the other.

use super::Session;

impl Session {
    pub(super) fn check_rival(&mut self) {
        if self.detached_why.is_some() || self.rival_seen {
            return;
        }
        let Ok(here) = crate::state::live::Here::of(&self.canon) else {
            return;
        };
        let Some((pid, path)) = crate::state::live::rival(&here) else {
            return;
        };
        let Some(hb) = path
            .parent()
            .and_then(|d| crate::state::heartbeat::read(d).ok())
        else {
            return;
        };
        self.rival_seen = true;
        if (hb.started, pid) < (self.started, std::process::id()) {
            let why = format!(
                "another referee (pid {pid}) watched `{}` first (its heartbeat `{}`); this one stops writing into it rather than fight it over the OBSERVER-* files",
                self.dir.display(),
                path.display()
            );
            self.fault("rival", why.clone());
            self.detached_why = Some(why);
        } else {
            self.say(&format!(
                "another referee (pid {pid}) started on `{}` after this one; it yields",
                self.dir.display()
            ));
        }
    }
}
