//! The embedded secret rules, family by family: one line that must be found and a near miss
//! that must not. Every token is built here from parts and pseudo-random characters, so no
//! real-looking secret sits in the repository in one piece (scanners and push protection
//! would flag it).

use super::*;

const ALNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
const B64URL: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const B64: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const UPPER32: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
const UPPERNUM: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
const LOWERNUM: &str = "abcdefghijklmnopqrstuvwxyz0123456789";
const HEX: &str = "0123456789abcdef";
const DIGITS: &str = "0123456789";

/// `n` characters of `alphabet`, the same for the same seed.
fn gen(n: usize, alphabet: &str, seed: u64) -> String {
    let a = alphabet.as_bytes();
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(a[usize::try_from(x % a.len() as u64).unwrap()])
        })
        .collect()
}

fn r(n: usize, alphabet: &str) -> String {
    static SEED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    gen(
        n,
        alphabet,
        SEED.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
    )
}

/// `n` hex digits random enough for the generic rules (3.5 bits per byte): hex tops out at 4,
/// and one draw in a few falls under 3.5.
fn random_hex(n: usize) -> String {
    loop {
        let h = r(n, HEX);
        if entropy(h.as_bytes()) >= 3.6 {
            return h;
        }
    }
}

fn b64url_encode(data: &[u8]) -> String {
    let a = B64URL.as_bytes();
    let mut out = String::new();
    for chunk in data.chunks(3) {
        let mut acc = 0u32;
        for (i, &b) in chunk.iter().enumerate() {
            acc |= u32::from(b) << (16 - 8 * i);
        }
        for i in 0..=chunk.len() {
            out.push(char::from(a[((acc >> (18 - 6 * i)) & 63) as usize]));
        }
    }
    out
}

fn rules() -> Arc<Rules> {
    Rules::embedded()
}

#[track_caller]
fn found(line: &str, id: &str) {
    let rules = rules();
    assert_eq!(
        rules.scan(line.as_bytes()).map(|h| h.id),
        Some(id),
        "line: {line}"
    );
}

#[track_caller]
fn clean(line: &str) {
    let rules = rules();
    assert_eq!(rules.scan(line.as_bytes()), None, "line: {line}");
}

const DASH5: &str = "-----";

#[test]
fn private_keys_in_every_armour() {
    for kind in ["RSA ", "DSA ", "EC ", "OPENSSH ", "ENCRYPTED ", ""] {
        found(
            &format!("{DASH5}BEGIN {kind}PRIVATE KEY{DASH5}"),
            "private-key",
        );
    }
    found(
        &format!("{DASH5}BEGIN PGP PRIVATE KEY BLOCK{DASH5}"),
        "private-key",
    );
    found(
        &format!("key = '{DASH5}BEGIN RSA PRIVATE KEY{DASH5}\\nMIIE'"),
        "private-key",
    );
    clean(&format!("{DASH5}BEGIN PUBLIC KEY{DASH5}"));
    clean(&format!("{DASH5}BEGIN PGP PUBLIC KEY BLOCK{DASH5}"));
    clean(&format!("{DASH5}BEGIN CERTIFICATE{DASH5}"));

    found(
        &format!("{}-3: ssh-ed25519", "PuTTY-User-Key-File"),
        "putty-private-key",
    );
    clean("a PuTTY-User-Key-File-3 file holds a key pair");

    found(
        &format!("---- BEGIN SSH2 {}PRIVATE KEY ----", "ENCRYPTED "),
        "ssh2-private-key",
    );
    clean("---- BEGIN SSH2 PUBLIC KEY ----");

    found(
        &format!("{DASH5}BEGIN OpenVPN Static key V1{DASH5}"),
        "openvpn-static-key",
    );
    clean(&format!("{DASH5}END OpenVPN Static key V1{DASH5}"));
}

#[test]
fn aws() {
    for prefix in ["AKIA", "ASIA", "ABIA", "ACCA"] {
        found(
            &format!("id = {prefix}{}", r(16, UPPER32)),
            "aws-access-key-id",
        );
    }
    clean(&format!("id = AKIA{}", r(15, UPPER32)));
    clean(&format!("id = AKIA{}", r(16, LOWERNUM)));
    // AWS's own documented example key is a placeholder.
    clean(&format!("id = {}{}{}", "AKIA", "IOSFODNN7", "EXAMPLE"));
    found(
        &format!("aws_secret_access_key = \"{}\"", r(40, B64)),
        "aws-secret-access-key",
    );
    // 40 hex digits are no AWS key (not random enough for that rule), but under a secret's
    // name they are a secret all the same (GitHub's OAuth client secrets are 40 hex digits).
    found(
        &format!("aws_secret_access_key = \"{}\"", random_hex(40)),
        "generic-secret",
    );
    clean(&format!(
        "aws_secret_access_key = \"{}{}\"",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCY", "EXAMPLEKEY"
    ));
}

#[test]
fn gcp_and_azure() {
    found(
        &format!("key: {}{}", "AI", "za".to_string() + &r(35, B64URL)),
        "gcp-api-key",
    );
    clean(&format!("key: AIza{}", r(30, B64URL)));
    found(
        &format!("{}{}", "GOCSPX-", r(28, B64URL)),
        "gcp-oauth-client-secret",
    );
    clean(&format!("GOCSPX-{}", r(20, B64URL)));
    found(
        &format!(
            "DefaultEndpointsProtocol=https;AccountName=a;AccountKey={}==",
            r(86, B64)
        ),
        "azure-storage-key",
    );
    clean(&format!("AccountName=a;AccountKey={}==", r(40, B64)));
    found(
        &format!("client_secret: {}8{}{}", r(3, ALNUM), "Q~", r(34, ALNUM)),
        "azure-ad-client-secret",
    );
    clean(&format!("client_secret: abc8{}short", "Q~"));
}

#[test]
fn version_control() {
    for kind in ['p', 'o', 'u', 's', 'r'] {
        found(&format!("t = gh{kind}_{}", r(36, ALNUM)), "github-token");
    }
    clean(&format!("t = ghp_{}", r(35, ALNUM)));
    clean(&format!("t = ghx_{}", r(36, ALNUM)));
    found(
        &format!("{}_pat_{}_{}", "github", r(22, ALNUM), r(59, ALNUM)),
        "github-fine-grained-token",
    );
    clean(&format!("github_pat_{}", r(40, ALNUM)));
    found(&format!("{}pat-{}", "gl", r(20, B64URL)), "gitlab-token");
    clean(&format!("glpat-{}", r(10, B64URL)));
    found(
        &format!("{}{}", "ATBB", r(32, ALNUM)),
        "bitbucket-app-password",
    );
    clean(&format!("ATBB{}", r(20, ALNUM)));
    found(
        &format!("{}{}", "ATATT3", r(186, B64URL)),
        "atlassian-api-token",
    );
    clean(&format!("ATATT3{}", r(50, B64URL)));
    found(
        &format!("bitbucket_client_secret = \"{}\"", r(64, ALNUM)),
        "bitbucket-client-secret",
    );
    clean(&format!("bitbucket_client_secret = \"{}\"", "a".repeat(40)));
}

#[test]
fn chat() {
    let num = |n| r(n, DIGITS);
    for kind in ["b", "p"] {
        found(
            &format!("{}{kind}-{}-{}-{}", "xox", num(12), num(13), r(24, ALNUM)),
            "slack-token",
        );
    }
    found(&format!("{}-1-{}", "xoxe", r(140, ALNUM)), "slack-token");
    found(
        &format!("{}.xoxp-1-{}", "xoxe", r(160, ALNUM)),
        "slack-token",
    );
    clean("xoxb-12345");
    found(
        &format!(
            "{}-1-A{}-{}-{}",
            "xapp",
            r(10, UPPERNUM),
            num(13),
            r(64, HEX)
        ),
        "slack-app-token",
    );
    clean("the xapp-token setting");
    found(
        &format!(
            "url = https://hooks.{}.com/services/T{}/B{}/{}",
            "slack",
            r(8, UPPERNUM),
            r(10, UPPERNUM),
            r(24, ALNUM)
        ),
        "slack-webhook",
    );
    // Slack's documented placeholder.
    clean(&format!(
        "url = https://hooks.slack.com/services/T00000000/B00000000/{}",
        "X".repeat(24)
    ));
    found(
        &format!(
            "https://{}.com/api/webhooks/{}/{}",
            "discord",
            num(18),
            r(68, B64URL)
        ),
        "discord-webhook",
    );
    clean("https://discord.com/api/webhooks/123/abc");
    found(
        &format!(
            "DISCORD_BOT = \"M{}.{}.{}\"",
            r(23, ALNUM),
            r(6, B64URL),
            r(27, B64URL)
        ),
        "discord-bot-token",
    );
    clean("discord_token = os.environ[\"DISCORD_TOKEN\"]");
    found(
        &format!("bot = {}:{}{}", num(10), "AA", r(33, B64URL)),
        "telegram-bot-token",
    );
    clean(&format!("bot = {}:AA{}", num(10), r(12, B64URL)));
}

#[test]
fn payment() {
    for kind in ["sk", "rk"] {
        found(
            &format!("k = {kind}_{}_{}", "live", r(24, ALNUM)),
            "stripe-secret-key",
        );
    }
    // Test-mode keys read and write the account's test data: a secret too.
    found(
        &format!("k = sk_{}_{}", "test", r(24, ALNUM)),
        "stripe-secret-key",
    );
    // A publishable key is public.
    clean(&format!("k = pk_live_{}", r(24, ALNUM)));
    found(
        &format!("{}_{}", "whsec", r(32, ALNUM)),
        "stripe-webhook-secret",
    );
    clean(&format!("whsec_{}", r(10, ALNUM)));
    found(&format!("t = {}{}", "EAAA", r(60, B64URL)), "square-token");
    found(
        &format!("t = {}-{}", "sq0atp", r(22, B64URL)),
        "square-token",
    );
    found(
        &format!("t = {}-{}", "sq0csp", r(43, B64URL)),
        "square-token",
    );
    clean(&format!("t = EAAA{}", r(20, B64URL)));
    found(
        &format!(
            "{}$production${}${}",
            "access_token",
            r(16, LOWERNUM),
            r(32, HEX)
        ),
        "braintree-access-token",
    );
    clean(&format!(
        "access_token$sandbox${}${}",
        r(16, LOWERNUM),
        r(32, HEX)
    ));
}

#[test]
fn package_registries() {
    found(
        &format!("//registry/:_authToken={}_{}", "npm", r(36, ALNUM)),
        "npm-token",
    );
    clean("npm_config_registry_url_for_the_private_mirror");
    found(
        &format!(
            "password = {}-{}{}",
            "pypi",
            "AgEIcHlwaS5vcmc",
            r(70, B64URL)
        ),
        "pypi-token",
    );
    clean(&format!("pypi-AgEIcHlwaS5vcmc{}", r(10, B64URL)));
    found(
        &format!("{}_{}", "rubygems", r(48, HEX)),
        "rubygems-api-key",
    );
    clean(&format!("rubygems_{}", r(40, HEX)));
    found(
        &format!("key {}{}", "oy2", r(43, LOWERNUM)),
        "nuget-api-key",
    );
    clean(&format!("key oy2{}", r(20, LOWERNUM)));
    found(
        &format!("{}_pat_{}", "dckr", r(27, B64URL)),
        "docker-hub-token",
    );
    clean("dckr_pat_abc");
}

#[test]
fn ai_providers_and_jwts() {
    for kind in ["api03", "admin01"] {
        found(
            &format!("{}-{kind}-{}AA", "sk-ant", r(93, B64URL)),
            "anthropic-api-key",
        );
    }
    clean("sk-ant-api03-abc");
    // Not Anthropic's shape (92 characters, or no `AA`): nor any other key's.
    clean(&format!("sk-ant-api03-{}AA", r(92, B64URL)));
    clean(&format!("sk-ant-api03-{}BB", r(93, B64URL)));
    found(
        &format!(
            "{}-{}{}{}",
            "sk-proj",
            r(58, B64URL),
            "T3BlbkFJ",
            r(58, B64URL)
        ),
        "openai-api-key",
    );
    // A project key without OpenAI's marker is still an `sk-` key.
    found(&format!("{}-{}", "sk-proj", r(48, B64URL)), "sk-api-key");
    found(
        &format!("{}{}{}{}", "sk-", r(20, ALNUM), "T3BlbkFJ", r(20, ALNUM)),
        "openai-api-key",
    );
    clean("sk-proj-abc");
    found(&format!("{}{}", "sk-", r(32, ALNUM)), "sk-api-key");
    found(
        &format!("{}.{}.{}", "SG", r(22, B64URL), r(43, B64URL)),
        "sendgrid-api-key",
    );
    // gitleaks' samples: 66 characters after `SG.`, without the middle dot.
    found(
        &format!("key = \"{}.{}\"", "SG", r(66, LOWERNUM)),
        "sendgrid-api-key",
    );
    clean(&format!("SG.{}", r(22, B64URL)));
    // One character too many (two dots), or another prefix.
    clean(&format!("SG.{}..{}", r(22, B64URL), r(43, B64URL)));
    clean(&format!("AG.{}.{}", r(22, B64URL), r(43, B64URL)));

    let header = b64url_encode(br#"{"alg":"HS256","typ":"JWT"}"#);
    let payload = b64url_encode(br#"{"sub":"1234567890","name":"a"}"#);
    found(
        &format!("Authorization: Bearer {header}.{payload}.{}", r(43, B64URL)),
        "jwt",
    );
    // A JWT's shape is enough: a mangled header, or no signature at all.
    found(
        &format!(
            "x = eyJ{}.eyJ{}.{}",
            r(20, ALNUM),
            r(20, ALNUM),
            r(20, ALNUM)
        ),
        "jwt",
    );
    found(&format!("{header}.{payload}"), "jwt");
    // Too short to be one, or a JSON object sent as it is.
    clean("eyJAAAA.eyJBBB");
    clean("eyJBB.eyJCC.eyJDDDD");
    clean(r#"{"alg":"HS256","typ":"JWT"}.{"name":"Jon Doe"}"#);
}

#[test]
fn generic_assignments_keep_hashes_uuids_templates_and_plain_words_out() {
    found(&format!("api_key = \"{}\"", r(32, ALNUM)), "generic-secret");
    found(
        &format!("DB_PASSWORD: '{}'", r(20, ALNUM)),
        "generic-secret",
    );
    found(
        &format!("export API_TOKEN={}", r(32, ALNUM)),
        "generic-secret-env",
    );
    clean("password = \"aaaaaaaabbbbbbbb\"");
    // A hash or a UUID under a secret's name is a secret; under a name that says it is a hash
    // or an id, it is not.
    let uuid = format!(
        "{}-{}-{}-{}-{}",
        r(8, HEX),
        r(4, HEX),
        r(4, HEX),
        r(4, HEX),
        r(12, HEX)
    );
    found(
        &format!("secret = \"{}\"", random_hex(40)),
        "generic-secret",
    );
    found(&format!("client_secret = \"{uuid}\""), "generic-secret");
    clean(&format!("token_sha256 = \"{}\"", r(64, HEX)));
    clean(&format!("credentialsId: '{uuid}'"));
    clean(&format!("secret_length = {}", r(16, ALNUM)));
    clean("password = \"${DB_PASSWORD}\"");
    clean("token = \"{{ vault_token }}\"");
    clean("api_key = \"<your api key here>\"");
    clean("password = get_password()");
    clean("API_TOKEN=changeme-please-now");
}

#[test]
fn placeholders_are_allowed_by_their_stopwords() {
    clean(&format!("t = ghp_{}{}", "EXAMPLE", r(29, ALNUM)));
    clean(&format!("api_key = \"dummy{}\"", r(20, ALNUM)));
    clean(&format!("api_key = \"{}xxxx{}\"", r(8, ALNUM), r(8, ALNUM)));
    // The same shape without a stopword is a finding.
    found(&format!("t = ghp_{}", r(36, ALNUM)), "github-token");
}

#[test]
fn entropy_is_in_bits_per_byte() {
    assert!(entropy(b"").abs() < f64::EPSILON);
    assert!(entropy(b"aaaaaaaa").abs() < f64::EPSILON);
    assert!((entropy(b"abababab") - 1.0).abs() < 1e-9);
    assert!((entropy(b"0123456789abcdef") - 4.0).abs() < 1e-9);
    // Below the threshold: a low-entropy token of a rule that asks for 3.0.
    clean(&format!("t = ghp_{}", "ab".repeat(18)));
}

#[test]
fn random_base64_raises_no_flood() {
    let blob = gen(1 << 20, B64, 7);
    let started = std::time::Instant::now();
    // As one megabyte-long line, and as 76-column lines.
    assert_eq!(rules().scan(blob.as_bytes()), None);
    let hits = blob
        .as_bytes()
        .chunks(76)
        .filter(|l| rules().scan(l).is_some())
        .count();
    assert!(hits <= 2, "{hits} findings in random base64");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "{:?}",
        started.elapsed()
    );
}

#[path = "secrets_family_tests.rs"]
mod families;

#[test]
fn jwt_and_base64url() {
    assert_eq!(
        base64url(b"eyJhIjoxfQ").as_deref(),
        Some(&br#"{"a":1}"#[..])
    );
    assert_eq!(base64url(b"a"), None);
    assert_eq!(base64url(b"ab+c"), None);
    assert!(!is_jwt(b"eyJhIjoxfQ"));
    assert!(is_jwt(b"eyJhIjoxfQ.eyJhIjoxfQ."));
}

#[test]
fn rule_files_are_checked_at_load() {
    let bad = |text: &str, needle: &str| {
        let e = Rules::parse(text, "x.toml", None).unwrap_err().to_string();
        assert!(e.contains(needle), "{e}");
    };
    let rule = "[[rule]]\nid = \"a\"\nname = \"A\"\n";
    bad(
        "schema_version = 2\n[[rule]]\nid=\"a\"\nname=\"A\"\nregex=\"a\"\n",
        "schema_version `2`",
    );
    bad(
        &format!("schema_version = 1\n{rule}regex = \"(\"\n"),
        "x.toml:2:1: rule `a`: invalid regex `(`",
    );
    bad(
        &format!("schema_version = 1\n{rule}regex = \"a\"\ngroup = 1\n"),
        "`group = 1`",
    );
    bad(
        &format!("schema_version = 1\n{rule}regex = \"a\"\nentropy = 9.0\n"),
        "between 0 and 8",
    );
    bad(
        &format!("schema_version = 1\n{rule}regex = \"a\"\nkeywords = [\"\"]\n"),
        "empty keyword",
    );
    bad(
        &format!("schema_version = 1\n{rule}regex = \"a\"\nvalidate = \"x\"\n"),
        "unknown variant",
    );
    bad(
        &format!("schema_version = 1\n{rule}regex = \"a\"\ncolour = 1\n"),
        "unknown field",
    );
    bad(
        &format!("schema_version = 1\n{rule}regex = \"a\"\n{rule}regex = \"b\"\n"),
        "duplicate rule id",
    );
    bad("schema_version = 1\n[allowlist]\nstopwords = [\"\"]\n[[rule]]\nid=\"a\"\nname=\"A\"\nregex=\"a\"\n", "empty stopword");
    let ok = Rules::parse(
        &format!("schema_version = 1\n{rule}regex = \"s3cr3t\"\n"),
        "x.toml",
        None,
    )
    .unwrap();
    assert_eq!(ok.scan(b"a s3cr3t b").map(|h| h.name), Some("A"));
    assert_eq!(
        Rules::load("relative.toml").unwrap_err().to_string(),
        "secret rules `relative.toml`: give `embedded` or an absolute path"
    );
}

/// A rule file that cannot be read is named as what it is, with the system's error as its cause.
#[test]
fn an_unreadable_rule_file_is_named_secret_rules() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("rules.toml");
    let e = Rules::load_file(&missing).unwrap_err();
    assert_eq!(
        e.to_string(),
        format!("cannot read secret rules file `{}`", missing.display())
    );
    let cause = std::error::Error::source(&e).map(ToString::to_string);
    assert_eq!(
        cause.as_deref(),
        Some("No such file or directory (os error 2)")
    );
    assert_eq!(
        Rules::load_file(dir.path()).unwrap_err().to_string(),
        format!(
            "cannot read secret rules file `{}`: not a regular file",
            dir.path().display()
        )
    );
}

#[test]
fn rules_from_a_file_are_part_of_the_protocols_hash() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("rules.toml");
    let embedded = include_str!("../../../protocols/secrets.toml");
    std::fs::write(&file, embedded).unwrap();
    let plain = super::super::Protocol::load("code-change").unwrap().sha256;
    let with = |text: &str| {
        std::fs::write(&file, text).unwrap();
        super::super::Protocol::load_with_secrets("code-change", Some(&file))
            .unwrap()
            .sha256
    };
    let same_rules = with(embedded);
    assert_ne!(
        same_rules, plain,
        "a referee run with --secrets says so in its hash"
    );
    let other_rules = with(&format!("{embedded}\n# another file\n"));
    assert_ne!(other_rules, same_rules, "other rules, another hash");
    assert_eq!(with(embedded), same_rules, "the same rules, the same hash");
}

#[test]
fn the_embedded_rules_compile_lazily_to_what_they_count() {
    // Counted from the text without compiling (a judgment that scans no line compiles none),
    // and the same as a strict parse of the text finds.
    let lazy = Rules::embedded();
    let parsed = Rules::parse(EMBEDDED_TEXT, "embedded", None).expect("valid");
    assert_eq!(lazy.len(), parsed.len());
    assert_eq!(lazy.sha256(), parsed.sha256());
    assert!(lazy.len() > 10);
    assert!(lazy.scan(b"nothing here").is_none());
}

/// How many of the rules' regexes are compiled.
fn compiled_count(rules: &Rules) -> usize {
    let c = rules.compiled();
    c.rules.iter().filter(|r| r.regex.get().is_some()).count()
}

#[test]
fn an_embedded_rule_is_compiled_only_for_a_line_that_holds_its_keywords() {
    // Parsed as the embedded rules are (not the process-wide copy other tests share).
    let lazy = Rules::parse_with(EMBEDDED_TEXT, "embedded", None, false).expect("valid");
    assert_eq!(compiled_count(&lazy), 0);
    assert!(lazy
        .scan(b"let total_of_every_item_in_the_list = items.iter().map(|i| i.len()).sum();")
        .is_none());
    // Only the rules that run on every line (no keywords: Discord's bot token, shaped enough
    // on its own) are compiled for a line without keywords.
    let always = lazy.compiled().always.len();
    assert!((1..=2).contains(&always), "{always} rules without keywords");
    assert_eq!(
        compiled_count(&lazy),
        always,
        "a line without keywords compiles no rule that has keywords"
    );
    // Nor does a line too short for any match of the rules its keywords name.
    assert!(lazy.scan(b"token=1").is_none());
    assert_eq!(
        compiled_count(&lazy),
        always,
        "a short line compiles nothing"
    );
    let hit = lazy.scan(format!("id = AKIA{}", r(16, UPPER32)).as_bytes());
    assert_eq!(hit.map(|h| h.id), Some("aws-access-key-id"));
    let some = compiled_count(&lazy);
    assert!(
        (always + 1..lazy.len() / 2).contains(&some),
        "{some} of {}",
        lazy.len()
    );
    // Every embedded rule compiles, with the capture group it names.
    let c = lazy.compiled();
    for r in &c.rules {
        let re = c.regex(r);
        assert!(
            r.group < re.group_info().group_len(regex_automata::PatternID::ZERO),
            "{}",
            r.id
        );
    }
    assert_eq!(compiled_count(&lazy), lazy.len());
    // A file's rules are compiled at load: a mistake there is the load's error.
    let eager = Rules::parse(EMBEDDED_TEXT, "x.toml", None).expect("valid");
    assert_eq!(compiled_count(&eager), eager.len());
}
