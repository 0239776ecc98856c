/*
 * Signatures in HLO shape syntax: what parses, into which tree and leaf
 * order, and what is refused, with the column and what was expected there.
 */
#include "ccshim/signature.h"
#include "check.h"

static ccshim_signature* parse(const char* text) {
  ccshim_signature* sig = NULL;
  CHECK_OK(ccshim_signature_parse(text, &sig));
  CHECK(sig != NULL);
  return sig;
}

static void roundtrip(const char* text, const char* canonical) {
  ccshim_signature* sig = parse(text);
  char buf[512];
  size_t n = ccshim_signature_format(sig, buf, sizeof buf);
  CHECK_STR_EQ(buf, canonical);
  CHECK_EQ(n, strlen(canonical));
  ccshim_signature_free(sig);
}

static void test_good(void) {
  ccshim_signature* s = parse("(f32[128], f32[2048]) -> f32[2048]");
  CHECK_EQ(s->num_operands, 2);
  CHECK_EQ(s->num_arg_leaves, 2);
  CHECK_EQ(s->num_ret_leaves, 1);
  CHECK(!s->result->is_tuple);
  CHECK(!s->has_tuple_operand);
  CHECK_EQ(s->arg_leaves[1]->dtype, 11);
  CHECK_EQ(s->arg_leaves[1]->rank, 1);
  CHECK_EQ(s->arg_leaves[1]->dims[0], 2048);
  CHECK_EQ(ccshim_shape_elements(s->arg_leaves[0]), 128);
  ccshim_signature_free(s);

  /* The example of XLA's documentation: nested operand tuples. */
  s = parse("((f32[32], (f32[64], f32[128]), f32[256])) -> (f32[512], f32[1024])");
  CHECK_EQ(s->num_operands, 1);
  CHECK(s->has_tuple_operand);
  CHECK_EQ(s->num_arg_leaves, 4);
  CHECK_EQ(s->operands[0].num_children, 3);
  CHECK_EQ(s->operands[0].num_leaves, 4);
  const ccshim_shape* mid = &s->operands[0].children[1];
  CHECK(mid->is_tuple);
  CHECK_EQ(mid->first_leaf, 1);
  CHECK_EQ(mid->children[1].first_leaf, 2);
  CHECK_EQ(s->arg_leaves[2]->dims[0], 128); /* depth first */
  CHECK_EQ(s->arg_leaves[3]->dims[0], 256);
  CHECK(s->result->is_tuple);
  CHECK_EQ(s->num_ret_leaves, 2);
  CHECK_EQ(s->ret_leaves[1]->dims[0], 1024);
  ccshim_signature_free(s);

  /* A one-element tuple result stays a tuple; an empty one has no leaves. */
  s = parse("() -> (s32[])");
  CHECK_EQ(s->num_operands, 0);
  CHECK(s->result->is_tuple);
  CHECK_EQ(s->num_ret_leaves, 1);
  CHECK_EQ(s->ret_leaves[0]->rank, 0);
  ccshim_signature_free(s);
  s = parse("(u8[4]) -> ()");
  CHECK(s->result->is_tuple);
  CHECK_EQ(s->num_ret_leaves, 0);
  ccshim_signature_free(s);

  /* Tokens, layouts (minor-to-major, kept as written), spaces. */
  roundtrip("( token[] , f32[2,3]{ 1,0 } ,s8[ ]{}) ->  (token, bf16[4]{0}, c64[2,3,4]{0,2,1})",
            "(token[], f32[2,3]{1,0}, s8[]{}) -> (token[], bf16[4]{0}, c64[2,3,4]{0,2,1})");
  s = parse("(f32[2,3], f32[2,3]{1,0}, f32[2,3]{0,1}, f32[]) -> c64[2,3,4]{0,2,1}");
  CHECK(s->arg_leaves[0]->layout == NULL && ccshim_shape_is_row_major(s->arg_leaves[0]));
  CHECK(ccshim_shape_is_row_major(s->arg_leaves[1]));
  CHECK_EQ(s->arg_leaves[2]->layout[0], 0);
  CHECK_EQ(s->arg_leaves[2]->layout[1], 1);
  CHECK(!ccshim_shape_is_row_major(s->arg_leaves[2]));
  CHECK(ccshim_shape_is_row_major(s->arg_leaves[3]));
  CHECK(!ccshim_shape_is_row_major(s->ret_leaves[0]));
  CHECK(!ccshim_shape_is_row_major(NULL));
  ccshim_signature_free(s);
  roundtrip(
      "(pred[1], s1[1], s2[1], s4[1], s8[1], s16[1], s32[1], s64[1], u1[1], "
      "u2[1], u4[1], u8[1], u16[1], u32[1], u64[1]) -> f16[1]",
      "(pred[1], s1[1], s2[1], s4[1], s8[1], s16[1], s32[1], s64[1], u1[1], "
      "u2[1], u4[1], u8[1], u16[1], u32[1], u64[1]) -> f16[1]");
  roundtrip(
      "(f32[0], f64[1], bf16[1], c64[1], c128[1], f8e5m2[1], f8e4m3fn[1], "
      "f8e4m3b11fnuz[1], f8e5m2fnuz[1], f8e4m3fnuz[1], f8e4m3[1], f8e3m4[1], "
      "f4e2m1fn[1], f8e8m0fnu[1]) -> ()",
      "(f32[0], f64[1], bf16[1], c64[1], c128[1], f8e5m2[1], f8e4m3fn[1], "
      "f8e4m3b11fnuz[1], f8e5m2fnuz[1], f8e4m3fnuz[1], f8e4m3[1], f8e3m4[1], "
      "f4e2m1fn[1], f8e8m0fnu[1]) -> ()");
}

/* Shape-polymorphic signatures: names, ties to operands, [...]. */
static void test_polymorphic(void) {
  roundtrip("(f32[n, m],f32[m]) -> f32[n]", "(f32[n,m], f32[m]) -> f32[n]");
  roundtrip("( m :s32[], a: f32[m,n]{0,1}, t: (f32[2], u8[...])) -> (f32[n], s32[])",
            "(m: s32[], a: f32[m,n]{0,1}, t: (f32[2], u8[...])) -> (f32[n], s32[])");
  ccshim_signature* s = parse("(m: s32[], n: u64[], a: f32[m,n], f32[k]) -> f32[...]");
  CHECK(!s->is_static);
  CHECK_EQ(s->num_dim_names, 3);
  CHECK_STR_EQ(s->dim_names[0], "m");
  CHECK_STR_EQ(s->dim_names[2], "k");
  CHECK_EQ(s->dim_operands[0], 0);
  CHECK_EQ(s->dim_operands[1], 1);
  CHECK_EQ(s->dim_operands[2], -1);
  CHECK_STR_EQ(s->operands[2].name, "a");
  CHECK(s->operands[3].name == NULL);
  CHECK(s->arg_leaves[2]->dims[0] == CCSHIM_DIM_NAMED &&
        s->arg_leaves[2]->dim_names[0] == s->dim_names[0]);
  CHECK(s->ret_leaves[0]->any_dims && ccshim_shape_elements(s->ret_leaves[0]) == -1);
  CHECK_EQ(ccshim_shape_elements(s->arg_leaves[2]), -1);
  ccshim_signature_free(s);
  s = parse("(x: f32[4]) -> f32[4]");
  CHECK(s->is_static && s->num_dim_names == 0 && s->dim_names == NULL);
  ccshim_signature_free(s);
  /* Leading dims: any number of them before the trailing dims written, their
   * product a name; the layout orders the trailing dims. */
  roundtrip("(b: s32[], a: f32[... b , m,n]{0,1}) -> (f32[...b,m,n]{0,1}, s32[...b], f32[..., 4])",
            "(b: s32[], a: f32[...b,m,n]{0,1}) -> (f32[...b,m,n]{0,1}, s32[...b], f32[...,4])");
  s = parse("(b: s32[], a: f32[...b,m,3]{0,1}) -> f32[...,3]");
  const ccshim_shape* lead = s->arg_leaves[1];
  CHECK(lead->any_dims && lead->rank == 2 && lead->elements_name == s->dim_names[0]);
  CHECK(lead->dims[0] == CCSHIM_DIM_NAMED && lead->dims[1] == 3);
  CHECK(lead->layout[0] == 0 && lead->layout[1] == 1 && !ccshim_shape_is_row_major(lead));
  CHECK(s->ret_leaves[0]->any_dims && s->ret_leaves[0]->rank == 1 &&
        s->ret_leaves[0]->elements_name == NULL && s->ret_leaves[0]->dim_names == NULL);
  CHECK(!s->is_static && ccshim_shape_elements(lead) == -1);
  ccshim_signature_free(s);
}

static void refused(const char* text, ccshim_status status, const char* message) {
  ccshim_signature* sig = (ccshim_signature*)1;
  CHECK_STATUS(ccshim_signature_parse(text, &sig), status);
  CHECK(sig == NULL);
  CHECK_CONTAINS(ccshim_last_error(), message);
}

static void test_refused(void) {
  refused("(f32[128], f32[2048) -> f32[2048]", CCSHIM_ESIGNATURE,
          "signature column 20: expected ',' or ']' after a dimension, found ')'");
  refused("(f32[128] f32[2048]) -> f32[2048]", CCSHIM_ESIGNATURE,
          "signature column 11: expected ',' or ')' in a tuple, found 'f'");
  refused("(f32[128]) f32[2048]", CCSHIM_ESIGNATURE,
          "signature column 12: expected '->' between operands and result");
  refused("(f32[128]) -> f32[2048] x", CCSHIM_ESIGNATURE,
          "signature column 25: expected end of text after the result, found 'x'");
  refused("(float[3]) -> f32[3]", CCSHIM_ESIGNATURE,
          "signature column 2: unknown element type 'float'");
  refused("(f32[?]) -> f32[3]", CCSHIM_ESIGNATURE,
          "signature column 6: dynamic dimensions are not supported");
  refused("(f32[<=8]) -> f32[3]", CCSHIM_ESIGNATURE, "dynamic dimensions");
  refused("(f32) -> f32[3]", CCSHIM_ESIGNATURE,
          "signature column 5: expected '[' after the element type, found ')'");
  refused("f32[3] -> f32[3]", CCSHIM_ESIGNATURE,
          "signature column 1: expected '(' opening the operand list, found 'f'");
  refused("", CCSHIM_ESIGNATURE, "found end of text");
  refused("(f32[2,1]{1,0) -> f32[1]", CCSHIM_ESIGNATURE,
          "signature column 14: expected ',' or '}' in the layout, found ')'");
  refused("(f32[1]{1,0}) -> f32[1]", CCSHIM_ESIGNATURE,
          "signature column 9: layout names dimension 1, but the array has rank 1");
  refused("(f32[2,2]{0,0}) -> f32[1]", CCSHIM_ESIGNATURE,
          "signature column 13: layout names dimension 0 twice");
  refused("(f32[2,2]{0}) -> f32[1]", CCSHIM_ESIGNATURE,
          "signature column 10: layout lists 1 dimension(s); the array has rank 2");
  refused("(f32[2]) -> bf16[4]{0:T(128)}", CCSHIM_ESIGNATURE,
          "signature column 22: tiled layouts and memory spaces are not supported");
  refused("(f32[2]{99999999999999999999}) -> f32[1]", CCSHIM_ESIGNATURE,
          "layout names dimension 99999999999999999999, but the array has rank 1");
  refused("(m: f32[], a: f32[m]) -> f32[]", CCSHIM_ESIGNATURE,
          "signature column 2: dimension 'm' names operand 0, m: f32[], which holds no size");
  refused("(m: s32[], m: s32[]) -> f32[]", CCSHIM_ESIGNATURE,
          "signature column 12: operand name 'm' is used twice");
  /* A size operand no dim uses beside a dim no operand binds: a typo whose
   * check would silently not be made (a kernel trusting m overruns a). */
  refused("(m: s32[], a: f32[n]) -> f32[n]", CCSHIM_ESIGNATURE,
          "signature column 2: operand 0 is named 'm' but no dimension uses it, and "
          "dimension 'n' is tied to no operand: a misspelling?");
  {
    /* Either alone is fine: a named operand for the reader, a shared dim. */
    ccshim_signature* s1 = parse("(m: s32[], a: f32[4]) -> f32[4]");
    ccshim_signature* s2 = parse("(a: f32[n], b: f32[n]) -> f32[n]");
    ccshim_signature* s3 = parse("(x: f32[2], a: f32[n]) -> f32[n]");
    ccshim_signature_free(s1);
    ccshim_signature_free(s2);
    ccshim_signature_free(s3);
  }
  refused("(f32[...]{0}) -> f32[]", CCSHIM_ESIGNATURE,
          "signature column 10: a layout needs the dims it orders, not [...]");
  refused("(f32[..]) -> f32[]", CCSHIM_ESIGNATURE, "expected a dimension size or name, found '.'");
  refused("(f32[... 3]) -> f32[]", CCSHIM_ESIGNATURE,
          "expected ']' or ',' after '...' (leading dims), or a name for their element count");
  refused("(f32[...b,]) -> f32[]", CCSHIM_ESIGNATURE,
          "signature column 11: expected a dimension after ',' (the trailing dims), found ']'");
  refused("(f32[...b]{0}) -> f32[]", CCSHIM_ESIGNATURE,
          "a layout needs the dims it orders, not [...] alone");
  refused("(f32[...b,m]{1,0}) -> f32[]", CCSHIM_ESIGNATURE,
          "layout names dimension 1, but the array has rank 1");
  refused("(token[...b,2]) -> f32[]", CCSHIM_ESIGNATURE, "a token has no dimensions");
  refused("(token[...]) -> f32[]", CCSHIM_ESIGNATURE, "a token has no dimensions");
  refused("(f32[4 n]) -> f32[]", CCSHIM_ESIGNATURE,
          "signature column 8: expected ',' or ']' after a dimension, found 'n'");
  refused("(f32[2]{x}) -> f32[1]", CCSHIM_ESIGNATURE,
          "signature column 9: expected a dimension number in the layout, found 'x'");
  refused("(f32[3]) -> f32[3]\x01", CCSHIM_ESIGNATURE, "found byte 0x01");
  refused("(f32[99999999999999999999]) -> f32[1]", CCSHIM_EOVERFLOW,
          "dimension size overflows int64");
  refused("(f32[4611686018427387904,4]) -> f32[1]", CCSHIM_EOVERFLOW, "size in bytes overflows");
  refused("(token[2]) -> f32[1]", CCSHIM_ESIGNATURE, "a token has no dimensions");

  char deep[256] = "(";
  for (int i = 0; i < 40; i++) strcat(deep, "(");
  strcat(deep, "f32[1]");
  for (int i = 0; i < 40; i++) strcat(deep, ")");
  strcat(deep, ") -> f32[1]");
  refused(deep, CCSHIM_EOVERFLOW, "tuples nest deeper than ccshim's limit of 32");

  char wide[600] = "(f32[";
  for (int i = 0; i < 65; i++) strcat(wide, i ? ",1" : "1");
  strcat(wide, "]) -> f32[1]");
  refused(wide, CCSHIM_EOVERFLOW, "rank exceeds ccshim's limit of 64");

  CHECK_STATUS(ccshim_signature_parse(NULL, NULL), CCSHIM_EINVAL);
  ccshim_signature* sig;
  CHECK_STATUS(ccshim_signature_parse(NULL, &sig), CCSHIM_EINVAL);
  ccshim_signature_free(NULL);
}

int main(void) {
  test_good();
  test_refused();
  test_polymorphic();
  printf("signature: ok\n");
  return 0;
}
