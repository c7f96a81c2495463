//! `export_module!`: turns a [`GameModule`](crate::GameModule) value into the wasm exports of
//! ABI version 1 (`ABI.md`, "Guest exports"). Compiled on every target so that a module crate
//! can invoke it unconditionally; natively it expands to nothing.

/// Exports a [`GameModule`](crate::GameModule) as a gamechain wasm module.
///
/// Write it once at the top level of the module crate (whose `crate-type` includes `"cdylib"`):
///
/// ```
/// # use gamechain_sdk::prelude::*;
/// # pub struct TicTacToe;
/// # impl GameModule for TicTacToe {
/// #     fn id(&self) -> &'static str { "tictactoe" }
/// #     fn apply(&self, _: &mut dyn Ctx, _: &str, _: &Value) -> Result<(), ActionError> { Ok(()) }
/// #     fn view(&self, _: &dyn StateRead, _: &Query) -> Result<Value, ActionError> { Ok(json!({})) }
/// # }
/// gamechain_sdk::export_module!(TicTacToe);
/// # fn main() {}
/// ```
///
/// The argument is an expression evaluated on every call, normally a unit struct. On
/// `wasm32` this emits `gc_abi_version`, `gc_alloc`, `gc_apply`, `gc_view`, `gc_end_block` and
/// `gc_scheduled` (types as ABI.md lists them), each a one-line call into the SDK's `guest` module, which also
/// provides the imports, the allocator and the panic hook. On every other target it expands to
/// nothing, so unit tests run the same type natively against `MockCtx`.
///
/// `gc_end_block` is always exported: it runs
/// [`GameModule::end_block`](crate::GameModule::end_block), which by default does nothing and
/// succeeds. So is `gc_scheduled`, which runs
/// [`GameModule::scheduled`](crate::GameModule::scheduled) (by default a refusal): a call is
/// only ever scheduled by the module itself, so exporting it costs nothing when unused.
///
/// **Migrations.** `export_module!(M, migrate)` also exports `gc_migrate`, which runs
/// [`GameModule::migrate`](crate::GameModule::migrate) when an upgrade puts this code in effect.
/// The chain tells "exports `gc_migrate`" from "does not" (only the former runs anything at an
/// upgrade), and a `macro_rules!` macro cannot see whether a type overrides a trait method, so
/// the opt-in is this explicit second argument: a module that overrides `migrate` without it is
/// never migrated on chain (the harness's migration test catches that: its wasm run then
/// differs from the native one).
///
/// **Schema.** `export_module!(TicTacToe, schema = SCHEMA)` also embeds `SCHEMA` (a `const &str`, normally
/// made by [`crate::schema!`]) in the `.wasm` as the custom section `gamechain.schema`
/// ([`crate::schema::SECTION`]), so the code hash covers it and the node can serve it
/// (`docs/modules.md`, "Schema"). The module's [`GameModule::schema`](crate::GameModule::schema)
/// should answer the same const, so native tests see what the chain sees (the author kit's
/// harness checks both are equal).
///
/// With a schema, `gc_apply` also **enforces it**: each op is checked before the module's
/// `apply` runs, under [`Schema::enforce_op`](crate::schema::Schema::enforce_op): `apply`'s
/// own refusals stand as they are, and an op it accepts that does not match the schema (an
/// undeclared field, a value of another type, …) is refused with the mismatch and undone. The
/// check reads the schema's op text ([`crate::schema::op_text`]: each op's fields, without
/// docs), which this macro computes at compile time, and parses only the op's own declaration.
/// [`MockCtx::submit`](crate::MockCtx::submit) applies the same rule natively.
/// Both together: `export_module!(M, schema = SCHEMA, migrate)`.
#[macro_export]
macro_rules! export_module {
    ($module:expr, schema = $schema:expr, migrate $(,)?) => {
        $crate::export_schema!($schema);
        $crate::export_module!(@entries $module, $schema);
        $crate::export_module!(@migrate $module);
    };
    ($module:expr, migrate, schema = $schema:expr $(,)?) => {
        $crate::export_module!($module, schema = $schema, migrate);
    };
    ($module:expr, migrate $(,)?) => {
        $crate::export_module!(@entries $module);
        $crate::export_module!(@migrate $module);
    };
    ($module:expr, schema = $schema:expr $(,)?) => {
        $crate::export_schema!($schema);
        $crate::export_module!(@entries $module, $schema);
    };
    ($module:expr $(,)?) => {
        $crate::export_module!(@entries $module);
    };

    // The op text `gc_apply` checks ops against (`schema::op_text`, made at compile time), or
    // `None` without a schema.
    (@ops) => {
        ::core::option::Option::None
    };
    (@ops $schema:expr) => {{
        const GC_SCHEMA_TEXT: &str = $schema;
        const GC_OPS_LEN: usize = $crate::schema::op_text_len(GC_SCHEMA_TEXT);
        const GC_OPS_BYTES: [u8; GC_OPS_LEN] =
            $crate::schema::op_text_bytes::<GC_OPS_LEN>(GC_SCHEMA_TEXT);
        const GC_OPS: &str = $crate::schema::op_text_str(&GC_OPS_BYTES);
        ::core::option::Option::Some(GC_OPS)
    }};

    (@migrate $module:expr) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            #[unsafe(no_mangle)]
            extern "C" fn gc_migrate(
                sender_ptr: i32,
                sender_len: i32,
                input_ptr: i32,
                input_len: i32,
            ) -> i32 {
                // SAFETY: the host passes buffers it got from `gc_alloc` and filled (ABI.md).
                unsafe {
                    $crate::guest::migrate(&$module, sender_ptr, sender_len, input_ptr, input_len)
                }
            }
        };
    };

    (@entries $module:expr $(, $schema:expr)?) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            #[unsafe(no_mangle)]
            extern "C" fn gc_abi_version() -> i32 {
                $crate::guest::abi_version()
            }

            #[unsafe(no_mangle)]
            extern "C" fn gc_alloc(len: i32) -> i32 {
                $crate::guest::alloc(len)
            }

            #[unsafe(no_mangle)]
            extern "C" fn gc_apply(
                sender_ptr: i32,
                sender_len: i32,
                op_ptr: i32,
                op_len: i32,
            ) -> i32 {
                let ops = $crate::export_module!(@ops $($schema)?);
                // SAFETY: the host passes buffers it got from `gc_alloc` and filled (ABI.md).
                unsafe {
                    $crate::guest::apply(&$module, ops, sender_ptr, sender_len, op_ptr, op_len)
                }
            }

            #[unsafe(no_mangle)]
            extern "C" fn gc_view(query_ptr: i32, query_len: i32) -> i32 {
                // SAFETY: the host passes a buffer it got from `gc_alloc` and filled (ABI.md).
                unsafe { $crate::guest::view(&$module, query_ptr, query_len) }
            }

            #[unsafe(no_mangle)]
            extern "C" fn gc_end_block() -> i32 {
                $crate::guest::end_block(&$module)
            }

            #[unsafe(no_mangle)]
            extern "C" fn gc_scheduled(id: i64, payload_ptr: i32, payload_len: i32) -> i32 {
                // SAFETY: the host passes a buffer it got from `gc_alloc` and filled (ABI.md).
                unsafe { $crate::guest::scheduled(&$module, id, payload_ptr, payload_len) }
            }
        };
    };
}

/// Embeds a schema text (a `const &str`) in the `.wasm` as the custom section
/// `gamechain.schema`: a `#[used]` static byte array with that `link_section`, on `wasm32` only
/// (natively it expands to nothing). [`export_module!`]`(M, schema = S)` and
/// [`crate::export_rules!`]`(R, schema = S)` call it; write it alone at most once per crate.
///
/// One schema per `.wasm`: the linker concatenates custom sections of the same name, so a module
/// crate that links another module crate (with its own schema) for wasm would carry two texts
/// run together, which the chain refuses at load (`custom section gamechain.schema is not a
/// valid module schema`, ABI.md, "Validation rules", rule 9).
#[macro_export]
macro_rules! export_schema {
    ($schema:expr $(,)?) => {
        #[cfg(target_arch = "wasm32")]
        const _: () = {
            const GC_SCHEMA_TEXT: &str = $schema;
            #[used]
            #[unsafe(link_section = "gamechain.schema")]
            static GC_SCHEMA: [u8; GC_SCHEMA_TEXT.len()] =
                $crate::schema::section_bytes::<{ GC_SCHEMA_TEXT.len() }>(GC_SCHEMA_TEXT);
        };
    };
}
