//! One deserializer for a tool's input: serde_json's `&Value` deserializer, with the
//! path of a failure and the unknown (ignored) fields tracked as it goes.
//!
//! An input type's `Deserialize` is compiled once, against [`Tracked`]: the same
//! code serves the fast path (a valid input) and the issues of an invalid one. The
//! generic parts (those instantiated per visitor, so per input type) do what
//! serde_json's own `&Value` deserializer does and no more; the tracking sits in
//! non-generic code and costs nothing until a failure or an ignored field.
//!
//! Paths and messages are those of `serde_path_to_error` (the failure) and
//! `serde_ignored` (the unknown fields) over serde_json's `&Value` deserializer:
//! a map value's key is part of the path when serde would have seen it as a string
//! or an integer (an enum or newtype key counts for unknown fields only), an enum
//! variant is part of a failure's path only, and errors are serde_json's own.

use std::cell::{Cell, RefCell};
use std::fmt;

use serde::de::{
    self, DeserializeSeed, EnumAccess, Expected, IntoDeserializer, MapAccess, SeqAccess,
    Unexpected, VariantAccess, Visitor,
};
use serde::Deserializer;
use serde_json::{Error, Map, Value};

use crate::Issue;

/// What a decode found besides its result: where it failed (the first failure,
/// innermost first) and the fields serde ignored.
pub(crate) struct Tracker {
    /// Record ignored fields (otherwise they are allowed).
    track_unknown: bool,
    /// Nothing until something is found: a decode that finds nothing (most calls)
    /// has nothing on the heap and a tracker whose drop is one test.
    found: RefCell<Option<Box<Found>>>,
}

/// What a [`Tracker`] found.
#[derive(Default)]
struct Found {
    failed_at: Option<String>,
    unknown: Vec<Issue>,
}

impl Tracker {
    #[inline]
    pub(crate) fn new(track_unknown: bool) -> Tracker {
        Tracker {
            track_unknown,
            found: RefCell::new(None),
        }
    }

    /// No unknown field was found (so a decode that succeeded stands).
    #[inline]
    pub(crate) fn found_nothing(&self) -> bool {
        match &*self.found.borrow() {
            None => true,
            Some(found) => found.unknown.is_empty(),
        }
    }

    /// After a decode that succeeded: `None` when its value stands, else the
    /// unknown fields it met.
    #[inline]
    pub(crate) fn verdict(self) -> Option<Vec<Issue>> {
        if self.found_nothing() {
            None
        } else {
            Some(self.issues(None))
        }
    }

    /// The issues of a decode that ended with `error` (`None`: it succeeded): the
    /// failure first, then the unknown fields met before it, in input order. Empty:
    /// the decoded value stands.
    pub(crate) fn issues(self, error: Option<Error>) -> Vec<Issue> {
        let Found {
            failed_at,
            mut unknown,
        } = self.found.into_inner().map(|f| *f).unwrap_or_default();
        match error {
            None => unknown,
            Some(e) => {
                let path = failed_at.unwrap_or_default();
                let mut issues = Vec::with_capacity(1 + unknown.len());
                issues.push(Issue::new(path, e.to_string()));
                issues.append(&mut unknown);
                issues
            }
        }
    }

    /// Note a failure at `frame` unless one was noted deeper already.
    #[cold]
    fn fail(&self, frame: &Frame<'_>, e: Error) -> Error {
        let mut found = self.found.borrow_mut();
        let found = found.get_or_insert_with(Box::default);
        if found.failed_at.is_none() {
            found.failed_at = Some(frame.path(Purpose::Failure));
        }
        e
    }

    #[cold]
    fn ignored(&self, frame: &Frame<'_>) {
        if self.track_unknown {
            self.found
                .borrow_mut()
                .get_or_insert_with(Box::default)
                .unknown
                .push(Issue::new(frame.path(Purpose::Unknown), "unknown field"));
        }
    }
}

/// Which path a frame chain is written as.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Purpose {
    /// `serde_path_to_error`'s: enum variants count, keys seen as strings or
    /// integers count.
    Failure,
    /// `serde_ignored`'s: no variants; keys seen through newtypes and enums count
    /// too.
    Unknown,
}

/// How a map key was seen by its `Deserialize`.
#[derive(Clone, Copy, Default)]
struct Seen {
    /// As a string or an integer, directly.
    direct: bool,
    /// So, or through a newtype or an enum.
    any: bool,
    /// Seen as an integer: the path names the key by the number, as the wrappers
    /// did (`0` for `"-0"`).
    int: bool,
}

impl Seen {
    const BOTH: Seen = Seen {
        direct: true,
        any: true,
        int: false,
    };
    const NONE: Seen = Seen {
        direct: false,
        any: false,
        int: false,
    };

    fn counts(self, purpose: Purpose) -> bool {
        match purpose {
            Purpose::Failure => self.direct,
            Purpose::Unknown => self.any,
        }
    }
}

/// Where a value sits in the input (a chain of stack frames: nothing is allocated
/// unless a path is written).
#[derive(Clone, Copy)]
enum Frame<'a> {
    Root,
    Seq {
        parent: &'a Frame<'a>,
        index: usize,
    },
    Map {
        parent: &'a Frame<'a>,
        key: &'a str,
        seen: Seen,
    },
    Variant {
        parent: &'a Frame<'a>,
        variant: &'a str,
    },
}

impl Frame<'_> {
    /// The dotted path (`cards.0.cvc`).
    fn path(&self, purpose: Purpose) -> String {
        let mut parts: Vec<std::borrow::Cow<'_, str>> = Vec::new();
        let mut frame = self;
        loop {
            match frame {
                Frame::Root => break,
                Frame::Seq { parent, index } => {
                    parts.push(index.to_string().into());
                    frame = parent;
                }
                Frame::Map { parent, key, seen } => {
                    if seen.counts(purpose) {
                        parts.push(if seen.int {
                            int_key(key).into()
                        } else {
                            (*key).into()
                        });
                    }
                    frame = parent;
                }
                Frame::Variant { parent, variant } => {
                    if purpose == Purpose::Failure {
                        parts.push((*variant).into());
                    }
                    frame = parent;
                }
            }
        }
        parts.reverse();
        parts.join(".")
    }
}

/// A key serde_json's parser read as an integer (its leading `-?[0-9]+`; anything
/// after it was refused), written as that integer.
fn int_key(key: &str) -> String {
    let sign = usize::from(key.starts_with('-'));
    let end = sign + key[sign..].bytes().take_while(u8::is_ascii_digit).count();
    let digits = &key[..end];
    match (digits.parse::<u128>(), digits.parse::<i128>()) {
        (Ok(u), _) => u.to_string(),
        (_, Ok(i)) => i.to_string(),
        _ => key.to_owned(),
    }
}

/// The deserializer: a value, where it sits, and the tracker.
pub(crate) struct Tracked<'a, 'de> {
    value: &'de Value,
    frame: &'a Frame<'a>,
    tracker: &'a Tracker,
}

impl<'a, 'de> Tracked<'a, 'de> {
    pub(crate) fn root(value: &'de Value, tracker: &'a Tracker) -> Self {
        const ROOT: &Frame<'static> = &Frame::Root;
        Tracked {
            value,
            frame: ROOT,
            tracker,
        }
    }

    #[inline]
    fn fail(&self, e: Error) -> Error {
        self.tracker.fail(self.frame, e)
    }
}

/// `serde_json`'s "invalid type" error for `value` (its wording of the value),
/// expecting `exp`.
#[cold]
fn invalid_type(value: &Value, exp: &dyn Expected) -> Error {
    /// A visitor that is only an expectation: `deserialize_unit` refuses any value
    /// with it, in serde_json's words (a `null` through `visit_unit`'s default).
    struct Expecting<'x>(&'x dyn Expected);
    impl Visitor<'_> for Expecting<'_> {
        type Value = ();
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            self.0.fmt(f)
        }
    }
    match value.deserialize_unit(Expecting(exp)) {
        Err(e) => e,
        Ok(()) => de::Error::invalid_type(Unexpected::Unit, exp),
    }
}

/// Leaf methods: serde_json's own (they call no deserializer of ours).
macro_rules! leaf {
    ($($method:ident)*) => {$(
        #[inline]
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            match self.value.$method(visitor) {
                Ok(v) => Ok(v),
                Err(e) => Err(self.fail(e)),
            }
        }
    )*};
}

// Errors are tracked with a `match`, not `map_err`: these fns are compiled once per
// visitor type (per input type and field type), and a closure would be one more each.
macro_rules! or_fail {
    ($r:expr, |$e:ident| $fail:expr) => {
        match $r {
            Ok(v) => Ok(v),
            Err($e) => Err($fail),
        }
    };
}

// The tracked seq and map visits are macros, expanded where they are used: as fns
// they were two more generic fns compiled per visitor type (per input type and per
// field type), each moving the decoded value once more in a debug build.

/// serde_json's `visit_array_ref`, elements tracked.
macro_rules! visit_seq {
    ($items:expr, $frame:expr, $tracker:expr, $visitor:expr) => {{
        let items: &[Value] = $items;
        let mut access = TrackedSeq {
            items: items.iter(),
            index: 0,
            frame: $frame,
            tracker: $tracker,
        };
        match $visitor.visit_seq(&mut access) {
            Ok(value) if access.items.len() == 0 => Ok(value),
            Ok(_) => Err(fewer(items.len(), "fewer elements in array")),
            Err(e) => Err(e),
        }
    }};
}

/// serde_json's object deserializer, keys and values tracked.
macro_rules! visit_map {
    ($entries:expr, $frame:expr, $tracker:expr, $visitor:expr) => {{
        let entries: &Map<String, Value> = $entries;
        let mut access = TrackedMap {
            entries: entries.iter(),
            pending: None,
            frame: $frame,
            tracker: $tracker,
        };
        match $visitor.visit_map(&mut access) {
            Ok(value) if access.entries.len() == 0 => Ok(value),
            Ok(_) => Err(fewer(entries.len(), "fewer elements in map")),
            Err(e) => Err(e),
        }
    }};
}

impl<'de> Deserializer<'de> for Tracked<'_, 'de> {
    type Error = Error;

    fn deserialize_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let r = match self.value {
            Value::Array(items) => visit_seq!(items, self.frame, self.tracker, visitor),
            Value::Object(map) => visit_map!(map, self.frame, self.tracker, visitor),
            other => other.deserialize_any(visitor),
        };
        or_fail!(r, |e| self.fail(e))
    }

    leaf! {
        deserialize_bool deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64
        deserialize_i128 deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64
        deserialize_u128 deserialize_f32 deserialize_f64 deserialize_char deserialize_str
        deserialize_string deserialize_identifier deserialize_unit
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_unit(visitor)
    }

    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let r = match self.value {
            Value::String(s) => visitor.visit_borrowed_str(s),
            Value::Array(items) => visit_seq!(items, self.frame, self.tracker, visitor),
            other => Err(invalid_type(other, &visitor)),
        };
        or_fail!(r, |e| self.fail(e))
    }

    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.deserialize_bytes(visitor)
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let (frame, tracker) = (self.frame, self.tracker);
        let r = match self.value {
            Value::Null => visitor.visit_none(),
            _ => visitor.visit_some(self),
        };
        or_fail!(r, |e| tracker.fail(frame, e))
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        let (frame, tracker) = (self.frame, self.tracker);
        // serde_json's raw value (feature `raw_value`) is serde_json's business.
        let r = if name == "$serde_json::private::RawValue" {
            self.value.deserialize_newtype_struct(name, visitor)
        } else {
            visitor.visit_newtype_struct(self)
        };
        or_fail!(r, |e| tracker.fail(frame, e))
    }

    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let r = match self.value {
            Value::Array(items) => visit_seq!(items, self.frame, self.tracker, visitor),
            other => Err(invalid_type(other, &visitor)),
        };
        or_fail!(r, |e| self.fail(e))
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_seq(visitor)
    }

    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        let r = match self.value {
            Value::Object(m) => visit_map!(m, self.frame, self.tracker, visitor),
            other => Err(invalid_type(other, &visitor)),
        };
        or_fail!(r, |e| self.fail(e))
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let r = match self.value {
            Value::Array(items) => visit_seq!(items, self.frame, self.tracker, visitor),
            Value::Object(m) => visit_map!(m, self.frame, self.tracker, visitor),
            other => Err(invalid_type(other, &visitor)),
        };
        or_fail!(r, |e| self.fail(e))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let (frame, tracker) = (self.frame, self.tracker);
        let access = match self.value {
            Value::Object(m) => {
                let mut entries = m.iter();
                match (entries.next(), entries.next()) {
                    (Some((variant, value)), None) => Ok(TrackedEnum {
                        variant,
                        value: Some(value),
                        frame,
                        tracker,
                    }),
                    _ => Err(single_key()),
                }
            }
            Value::String(variant) => Ok(TrackedEnum {
                variant,
                value: None,
                frame,
                tracker,
            }),
            other => Err(invalid_type(other, &"string or map")),
        };
        let r = match access {
            Ok(access) => visitor.visit_enum(access),
            Err(e) => Err(e),
        };
        or_fail!(r, |e| tracker.fail(frame, e))
    }

    fn deserialize_ignored_any<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        self.tracker.ignored(self.frame);
        match visitor.visit_unit() {
            Ok(v) => Ok(v),
            Err(e) => Err(self.fail(e)),
        }
    }
}

#[cold]
fn single_key() -> Error {
    de::Error::invalid_value(Unexpected::Map, &"map with a single key")
}

#[cold]
fn fewer(len: usize, what: &'static str) -> Error {
    de::Error::invalid_length(len, &what)
}

struct TrackedSeq<'a, 'de> {
    items: std::slice::Iter<'de, Value>,
    index: usize,
    frame: &'a Frame<'a>,
    tracker: &'a Tracker,
}

impl<'de> SeqAccess<'de> for TrackedSeq<'_, 'de> {
    type Error = Error;

    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, Error> {
        let Some(value) = self.items.next() else {
            return Ok(None);
        };
        let frame = Frame::Seq {
            parent: self.frame,
            index: self.index,
        };
        self.index += 1;
        match seed.deserialize(Tracked {
            value,
            frame: &frame,
            tracker: self.tracker,
        }) {
            Ok(v) => Ok(Some(v)),
            Err(e) => Err(self.tracker.fail(&frame, e)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self.items.size_hint() {
            (lower, Some(upper)) if lower == upper => Some(upper),
            _ => None,
        }
    }
}

struct TrackedMap<'a, 'de> {
    entries: serde_json::map::Iter<'de>,
    /// The entry whose key was read, and how its key was seen.
    pending: Option<(&'de str, &'de Value, Seen)>,
    frame: &'a Frame<'a>,
    tracker: &'a Tracker,
}

impl<'de> MapAccess<'de> for TrackedMap<'_, 'de> {
    type Error = Error;

    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, Error> {
        // Compiled once per key type: what does not need `K` is in `next_entry`
        // and `key_read`.
        let Some((key, value)) = self.next_entry() else {
            return Ok(None);
        };
        let seen = Cell::new(Seen::NONE);
        match seed.deserialize(KeyDe {
            key,
            seen: &seen,
            as_: Seen::BOTH,
        }) {
            Ok(k) => {
                self.key_read(key, value, &seen);
                Ok(Some(k))
            }
            Err(e) => Err(self.key_failed(key, seen.get(), e)),
        }
    }

    fn next_value_seed<T: DeserializeSeed<'de>>(&mut self, seed: T) -> Result<T::Value, Error> {
        let (key, value, seen) = match self.pending.take() {
            Some(entry) => entry,
            None => return Err(self.no_value()),
        };
        if self.tracker.track_unknown && !seen.any {
            return Err(self.non_string_key());
        }
        let frame = Frame::Map {
            parent: self.frame,
            key,
            seen,
        };
        match seed.deserialize(Tracked {
            value,
            frame: &frame,
            tracker: self.tracker,
        }) {
            Ok(v) => Ok(v),
            Err(e) => Err(self.tracker.fail(&frame, e)),
        }
    }

    fn size_hint(&self) -> Option<usize> {
        match self.entries.size_hint() {
            (lower, Some(upper)) if lower == upper => Some(upper),
            _ => None,
        }
    }
}

impl<'de> TrackedMap<'_, 'de> {
    #[inline]
    fn next_entry(&mut self) -> Option<(&'de str, &'de Value)> {
        match self.entries.next() {
            Some((key, value)) => Some((key.as_str(), value)),
            None => None,
        }
    }

    /// The entry whose key was read, kept for its value.
    #[inline]
    fn key_read(&mut self, key: &'de str, value: &'de Value, seen: &Cell<Seen>) {
        self.pending = Some((key, value, seen.get()));
    }

    #[cold]
    fn key_failed(&self, key: &str, seen: Seen, e: Error) -> Error {
        let frame = Frame::Map {
            parent: self.frame,
            key,
            seen,
        };
        self.tracker.fail(&frame, e)
    }

    #[cold]
    fn no_value(&self) -> Error {
        self.tracker
            .fail(self.frame, de::Error::custom("value is missing"))
    }

    /// `serde_ignored` cannot name a value whose key serde did not read as a
    /// string or an integer.
    #[cold]
    fn non_string_key(&self) -> Error {
        self.tracker
            .fail(self.frame, de::Error::custom("non-string key"))
    }
}

struct TrackedEnum<'a, 'de> {
    variant: &'de str,
    value: Option<&'de Value>,
    frame: &'a Frame<'a>,
    tracker: &'a Tracker,
}

impl<'a, 'de: 'a> EnumAccess<'de> for TrackedEnum<'a, 'de> {
    type Error = Error;
    type Variant = TrackedVariant<'a, 'de>;

    fn variant_seed<V: DeserializeSeed<'de>>(
        self,
        seed: V,
    ) -> Result<(V::Value, Self::Variant), Error> {
        let variant: serde::de::value::StrDeserializer<'_, Error> =
            self.variant.into_deserializer();
        match seed.deserialize(variant) {
            Ok(v) => Ok((
                v,
                TrackedVariant {
                    value: self.value,
                    frame: Frame::Variant {
                        parent: self.frame,
                        variant: self.variant,
                    },
                    tracker: self.tracker,
                },
            )),
            Err(e) => Err(self.tracker.fail(self.frame, e)),
        }
    }
}

struct TrackedVariant<'a, 'de> {
    value: Option<&'de Value>,
    frame: Frame<'a>,
    tracker: &'a Tracker,
}

impl<'de> VariantAccess<'de> for TrackedVariant<'_, 'de> {
    type Error = Error;

    fn unit_variant(self) -> Result<(), Error> {
        let r = match self.value {
            Some(value) => <() as serde::Deserialize>::deserialize(value),
            None => Ok(()),
        };
        or_fail!(r, |e| self.tracker.fail(&self.frame, e))
    }

    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, Error> {
        let r = match self.value {
            Some(value) => seed.deserialize(Tracked {
                value,
                frame: &self.frame,
                tracker: self.tracker,
            }),
            None => Err(unit_variant("newtype variant")),
        };
        or_fail!(r, |e| self.tracker.fail(&self.frame, e))
    }

    fn tuple_variant<V: Visitor<'de>>(self, _len: usize, visitor: V) -> Result<V::Value, Error> {
        let r = match self.value {
            Some(Value::Array(items)) if items.is_empty() => visitor.visit_unit(),
            Some(Value::Array(items)) => visit_seq!(items, &self.frame, self.tracker, visitor),
            Some(other) => Err(invalid_type(other, &"tuple variant")),
            None => Err(unit_variant("tuple variant")),
        };
        or_fail!(r, |e| self.tracker.fail(&self.frame, e))
    }

    fn struct_variant<V: Visitor<'de>>(
        self,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        let r = match self.value {
            Some(Value::Object(m)) => visit_map!(m, &self.frame, self.tracker, visitor),
            Some(other) => Err(invalid_type(other, &"struct variant")),
            None => Err(unit_variant("struct variant")),
        };
        or_fail!(r, |e| self.tracker.fail(&self.frame, e))
    }
}

#[cold]
fn unit_variant(expected: &'static str) -> Error {
    de::Error::invalid_type(Unexpected::UnitVariant, &expected)
}

/// A map key: serde_json's key deserializer, noting how the key was seen.
struct KeyDe<'a, 'de> {
    key: &'de str,
    seen: &'a Cell<Seen>,
    /// What a visit of the key counts as here.
    as_: Seen,
}

impl KeyDe<'_, '_> {
    #[inline]
    fn saw(&self) {
        let s = self.seen.get();
        self.seen.set(Seen {
            direct: s.direct | self.as_.direct,
            any: s.any | self.as_.any,
            int: s.int,
        });
    }
}

/// serde_json's numeric keys: a number in quotes, read by serde_json's parser.
macro_rules! numeric_key {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            if !matches!(self.key.as_bytes().first(), Some(b'0'..=b'9' | b'-')) {
                return Err(expected_numeric_key());
            }
            let mut de = serde_json::Deserializer::from_str(self.key);
            let value = (&mut de).$method(SeeKey {
                visitor,
                seen: self.seen,
                as_: self.as_,
            })?;
            if de.end().is_err() || trailing_space(self.key) {
                return Err(expected_numeric_key());
            }
            Ok(value)
        }
    )*};
}

/// Methods serde_json answers with the key as a borrowed string.
macro_rules! str_key {
    ($($method:ident)*) => {$(
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
            self.saw();
            visitor.visit_borrowed_str(self.key)
        }
    )*};
}

fn trailing_space(key: &str) -> bool {
    matches!(key.as_bytes().last(), Some(b' ' | b'\n' | b'\t' | b'\r'))
}

#[cold]
fn expected_numeric_key() -> Error {
    de::Error::custom("invalid value: expected key to be a number in quotes")
}

impl<'de> Deserializer<'de> for KeyDe<'_, 'de> {
    type Error = Error;

    str_key! {
        deserialize_any deserialize_char deserialize_str deserialize_string
        deserialize_bytes deserialize_byte_buf deserialize_unit deserialize_seq
        deserialize_map deserialize_identifier deserialize_ignored_any
    }

    numeric_key! {
        deserialize_i8 deserialize_i16 deserialize_i32 deserialize_i64 deserialize_i128
        deserialize_u8 deserialize_u16 deserialize_u32 deserialize_u64 deserialize_u128
        deserialize_f32 deserialize_f64
    }

    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _len: usize,
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        _fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        self.deserialize_any(visitor)
    }

    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        match self.key {
            "true" | "false" => {
                self.saw();
                visitor.visit_bool(self.key == "true")
            }
            _ => Err(de::Error::invalid_type(Unexpected::Str(self.key), &visitor)),
        }
    }

    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, Error> {
        // Neither wrapper sees through `Some`.
        visitor.visit_some(KeyDe {
            as_: Seen::NONE,
            ..self
        })
    }

    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, Error> {
        // Seen through a newtype: counts for unknown fields only.
        visitor.visit_newtype_struct(KeyDe {
            as_: Seen {
                direct: false,
                any: self.as_.any,
                int: false,
            },
            ..self
        })
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, Error> {
        // Seen through an enum: counts for unknown fields only.
        let s = self.seen.get();
        self.seen.set(Seen {
            direct: s.direct,
            any: s.any | self.as_.any,
            int: s.int,
        });
        let key: serde::de::value::CowStrDeserializer<'_, Error> =
            std::borrow::Cow::Borrowed(self.key).into_deserializer();
        key.deserialize_enum(name, variants, visitor)
    }
}

/// A numeric key's visitor, noting that the key was seen when the parser hands it
/// a string, a boolean or an integer (a float is not a key to either wrapper).
struct SeeKey<'a, V> {
    visitor: V,
    seen: &'a Cell<Seen>,
    as_: Seen,
}

impl<V> SeeKey<'_, V> {
    fn saw(&self, int: bool) {
        let s = self.seen.get();
        if self.as_.any {
            self.seen.set(Seen {
                direct: s.direct | self.as_.direct,
                any: true,
                int: int | s.int,
            });
        }
    }
}

macro_rules! see_int {
    ($($method:ident: $ty:ty,)*) => {$(
        fn $method<E: de::Error>(self, v: $ty) -> Result<Self::Value, E> {
            self.saw(true);
            self.visitor.$method(v)
        }
    )*};
}

impl<'de, V: Visitor<'de>> Visitor<'de> for SeeKey<'_, V> {
    type Value = V::Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.visitor.expecting(f)
    }

    see_int! {
        visit_i8: i8, visit_i16: i16, visit_i32: i32, visit_i64: i64, visit_i128: i128,
        visit_u8: u8, visit_u16: u16, visit_u32: u32, visit_u64: u64, visit_u128: u128,
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        self.saw(false);
        self.visitor.visit_bool(v)
    }

    fn visit_f32<E: de::Error>(self, v: f32) -> Result<Self::Value, E> {
        self.visitor.visit_f32(v)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        self.visitor.visit_f64(v)
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        self.saw(false);
        self.visitor.visit_str(v)
    }

    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        self.saw(false);
        self.visitor.visit_borrowed_str(v)
    }

    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        self.saw(false);
        self.visitor.visit_string(v)
    }
}
