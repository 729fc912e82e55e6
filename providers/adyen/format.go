package adyen

import "strings"

// The signed text joins eight fields with ":" and escapes nothing, so one
// text could be read with characters moved from one field into its
// neighbour: a genuine item whose merchantReference is "order:42" also
// reads as originalReference ":ShopECOM", merchantAccountCode "order" and
// merchantReference "42", under the same hmacSignature and another event
// key. readFormats gives every signed text one reading: every field but
// merchantReference is read in the format Adyen documents, none of which
// holds a ":", so the three fields left of merchantReference end at the
// first three colons and the four right of it begin after the last four;
// merchantReference, free text, is whatever lies between.
//
// The formats are Adyen's (docs.adyen.com, NotificationRequestItem;
// Adyen's API libraries): pspReference and originalReference are PSP
// references, letters and digits (16 of them in production; Adyen's Go
// library's test vector uses "pspReference", so the length is not held
// to); merchantAccountCode is a merchant account's code, letters, digits
// and underscores (Management API, createMerchantRequest.reference), of
// which only the ":" matters here; amount.value is an integer in minor
// units as Adyen's library writes it (readItem); currency is an ISO 4217
// code, three capital letters; eventCode is one of the codes Adyen
// documents, capital letters and underscores (digits allowed); success is
// "true" or "false". An absent field is empty, as Adyen signs it.
func (f *fields) readFormats() bool {
	switch {
	case !isReference(f.psp, false), !isReference(f.original, true):
		return false
	case strings.IndexByte(f.merchant, ':') >= 0:
		return false
	case f.currency != "" && !isCurrency(f.currency):
		return false
	case !isEventCode(f.eventCode):
		return false
	case f.success != "true" && f.success != "false":
		return false
	}
	return true
}

// isReference reports whether s is a PSP reference: 1 to MaxFieldBytes
// ASCII letters and digits, or empty when optional.
func isReference(s string, optional bool) bool {
	if s == "" {
		return optional
	}
	if len(s) > MaxFieldBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('0' <= c && c <= '9' || 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			return false
		}
	}
	return true
}

// isCurrency reports whether s is three capital ASCII letters.
func isCurrency(s string) bool {
	if len(s) != 3 {
		return false
	}
	for i := 0; i < 3; i++ {
		if s[i] < 'A' || s[i] > 'Z' {
			return false
		}
	}
	return true
}

// isEventCode reports whether s is 1 to MaxFieldBytes capital ASCII
// letters, digits and underscores.
func isEventCode(s string) bool {
	if s == "" || len(s) > MaxFieldBytes {
		return false
	}
	for i := 0; i < len(s); i++ {
		if c := s[i]; !('A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
