//! Repeated messages said once: a command that has the same thing to say about many inputs
//! (1,800 runs that collide on their names, a warning for every trace of a directory) says the
//! first few in full, then how many more of that kind there were.

/// How many messages of one kind are said in full.
pub(super) const SHOWN: usize = 3;

/// What a message says, its particulars left out: every backquoted part and every number
/// replaced, so messages that differ only in what they name are of one kind.
fn kind_of(message: &str) -> String {
    let mut kind = String::with_capacity(message.len());
    let mut quoted = false;
    let mut last_digit = false;
    for c in message.chars() {
        match c {
            '`' => {
                if !quoted {
                    kind.push_str("`…`");
                }
                quoted = !quoted;
                last_digit = false;
            }
            _ if quoted => {}
            d if d.is_ascii_digit() => {
                if !last_digit {
                    kind.push('#');
                }
                last_digit = true;
            }
            other => {
                kind.push(other);
                last_digit = false;
            }
        }
    }
    kind
}

/// `messages` as they are said: the first [`SHOWN`] of each kind in full, in order, then — after
/// the last message of a kind that had more — a line saying how many more there were.
pub(super) fn collapse(messages: &[String]) -> Vec<String> {
    let kinds: Vec<String> = messages.iter().map(|m| kind_of(m)).collect();
    let mut total: std::collections::HashMap<&str, usize> = Default::default();
    for k in &kinds {
        *total.entry(k.as_str()).or_default() += 1;
    }
    let mut seen: std::collections::HashMap<&str, usize> = Default::default();
    let mut out = Vec::new();
    for (m, k) in messages.iter().zip(&kinds) {
        let n = seen.entry(k.as_str()).or_default();
        *n += 1;
        if *n <= SHOWN {
            out.push(m.clone());
        }
        let all = total[k.as_str()];
        if *n == all && all > SHOWN {
            out.push(format!("… and {} more of the kind above", all - SHOWN));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn many_of_a_kind_are_said_three_times_then_counted() {
        let mut messages: Vec<String> = (0..1800)
            .map(|i| format!("scenario `s` case `c{i}` names two of its runs (`out/s/c{i}.trace`)"))
            .collect();
        messages.insert(1, "a secret in `x`: AWS key".to_owned());
        let said = collapse(&messages);
        assert_eq!(said.len(), 5, "{said:?}");
        assert_eq!(said[1], "a secret in `x`: AWS key");
        assert!(said[3].contains("`c2`"), "{said:?}");
        assert_eq!(said[4], "… and 1797 more of the kind above");
        // A few are said in full.
        let few = collapse(&messages[..3]);
        assert_eq!(few, messages[..3].to_vec());
    }
}
