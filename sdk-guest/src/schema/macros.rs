//! `schema!`: declares a module's schema (`mod.rs`, `docs/modules.md`, "Schema") once, in
//! Rust, as a `const &str` of compact JSON built at compile time with `concat!`.

/// Declares a module schema as a `const` of compact JSON (format version 1, see
/// [`schema`](crate::schema) and `docs/modules.md`, "Schema").
///
/// ```
/// gamechain_sdk::schema! {
///     /// The counter's schema.
///     pub const SCHEMA = "counter";
///     ops {
///         "inc" "Adds `by` (default 1) to the count." {
///             by: u32 [optional] "how much to add",
///         },
///         "reset" "Sets the count to 0." {},
///     }
///     events {
///         "counter.changed" "The count changed." { n: u64, by: address [nullable] },
///     }
///     views {
///         "count" "The count." {} => object { n: u64, history: array(u64), owner: enum("a", "b") },
///     }
/// }
/// # fn main() {
/// assert!(SCHEMA.starts_with(r#"{"schema_version":1,"module":"counter","ops":[{"kind":"inc""#));
/// gamechain_sdk::schema::Schema::parse(SCHEMA).unwrap();
/// # }
/// ```
///
/// Grammar: `"<kind>" "<doc>"? { <fields> }` for an op or event (comma separated), `"<name>"
/// "<doc>"? { <query fields> } => <type>` for a view; a field is `name: <type>`; a type is
/// `string`, `bool`, `u32`, `u64`, `i64`, `amount`, `address`, `hex`, `any`, `array(<type>)`,
/// `map(<type>)`, `enum("a", "b", …)` or `object { <fields> }`, then optionally flags
/// `[optional nullable]` and a doc string literal. Field order is kept. Doc strings must not
/// contain `"` or `\` (they are copied into the JSON as they are); the schema's unit test
/// (`Schema::parse(SCHEMA)`) catches a malformed result.
#[macro_export]
macro_rules! schema {
    (
        $(#[$meta:meta])*
        $vis:vis const $name:ident = $module:literal;
        ops { $($ops:tt)* }
        events { $($events:tt)* }
        views { $($views:tt)* }
    ) => {
        $(#[$meta])*
        $vis const $name: &str = concat!(
            "{\"schema_version\":1,\"module\":\"", $module, "\",\"ops\":[",
            $crate::schema!(@messages $($ops)*),
            "],\"events\":[",
            $crate::schema!(@messages $($events)*),
            "],\"views\":[",
            $crate::schema!(@views $($views)*),
            "]}"
        );
    };

    // An op or event list, comma separated.
    (@messages) => { "" };
    (@messages $kind:literal $($doc:literal)? { $($fields:tt)* } $(, $($rest:tt)*)?) => {
        concat!(
            "{\"kind\":\"", $kind, "\"",
            $(",\"doc\":\"", $doc, "\"",)?
            ",\"fields\":{", $crate::schema!(@fields $($fields)*), "}}",
            $crate::schema!(@more messages $($($rest)*)?)
        )
    };

    // A view list, comma separated.
    (@views) => { "" };
    (@views $vname:literal $($doc:literal)? { $($query:tt)* } =>
        $kind:ident $(( $($inner:tt)* ))? $({ $($obj:tt)* })? $([ $($flag:ident)* ])? $($tdoc:literal)?
        $(, $($rest:tt)*)?) => {
        concat!(
            "{\"name\":\"", $vname, "\"",
            $(",\"doc\":\"", $doc, "\"",)?
            ",\"query\":{", $crate::schema!(@fields $($query)*), "},\"answer\":",
            $crate::schema!(@type $kind [$($($inner)*)?] [$($($obj)*)?] [$($($flag)*)?] $($tdoc)?),
            "}",
            $crate::schema!(@more views $($($rest)*)?)
        )
    };

    // Fields `name: type`, comma separated.
    (@fields) => { "" };
    (@fields $fname:ident :
        $kind:ident $(( $($inner:tt)* ))? $({ $($obj:tt)* })? $([ $($flag:ident)* ])? $($doc:literal)?
        $(, $($rest:tt)*)?) => {
        concat!(
            "\"", stringify!($fname), "\":",
            $crate::schema!(@type $kind [$($($inner)*)?] [$($($obj)*)?] [$($($flag)*)?] $($doc)?),
            $crate::schema!(@more fields $($($rest)*)?)
        )
    };

    // The rest of a list: nothing, or a comma and the list.
    (@more $list:ident) => { "" };
    (@more messages $($rest:tt)+) => { concat!(",", $crate::schema!(@messages $($rest)+)) };
    (@more views $($rest:tt)+) => { concat!(",", $crate::schema!(@views $($rest)+)) };
    (@more fields $($rest:tt)+) => { concat!(",", $crate::schema!(@fields $($rest)+)) };

    // One type: `[inner] [object fields] [flags] doc?`.
    (@type $kind:ident [$($inner:tt)*] [$($obj:tt)*] [$($flag:ident)*] $($doc:literal)?) => {
        concat!(
            "{\"type\":\"", stringify!($kind), "\"",
            $crate::schema!(@extra $kind [$($inner)*] [$($obj)*]),
            $(",\"", stringify!($flag), "\":true",)*
            $(",\"doc\":\"", $doc, "\"",)?
            "}"
        )
    };

    // What a type adds after its name.
    (@extra array [$kind:ident $(( $($inner:tt)* ))? $({ $($obj:tt)* })? $([ $($flag:ident)* ])?] []) => {
        concat!(",\"items\":",
            $crate::schema!(@type $kind [$($($inner)*)?] [$($($obj)*)?] [$($($flag)*)?]))
    };
    (@extra map [$kind:ident $(( $($inner:tt)* ))? $({ $($obj:tt)* })? $([ $($flag:ident)* ])?] []) => {
        concat!(",\"values\":",
            $crate::schema!(@type $kind [$($($inner)*)?] [$($($obj)*)?] [$($($flag)*)?]))
    };
    (@extra enum [$first:literal $(, $value:literal)* $(,)?] []) => {
        concat!(",\"values\":[\"", $first, "\"", $(",\"", $value, "\"",)* "]")
    };
    (@extra object [] [$($fields:tt)*]) => {
        concat!(",\"fields\":{", $crate::schema!(@fields $($fields)*), "}")
    };
    (@extra $kind:ident [] []) => { "" };
}
