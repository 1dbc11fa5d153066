package conduit

import (
	"github.com/conduitmcp/conduit/guards"
	"github.com/conduitmcp/conduit/messages"
)

// Elicitation form types, defined in package messages: a form-mode
// ElicitationRequest lists its fields in Form, typed, so a UI never reads
// JSON Schema.
type (
	FormField   = messages.FormField
	FieldOption = messages.FieldOption
	FieldKind   = messages.FieldKind
	FieldError  = messages.FieldError
)

// Form field kinds.
const (
	FieldString      = messages.FieldString
	FieldNumber      = messages.FieldNumber
	FieldInteger     = messages.FieldInteger
	FieldBoolean     = messages.FieldBoolean
	FieldSelect      = messages.FieldSelect
	FieldMultiSelect = messages.FieldMultiSelect
)

// CheckField checks one answer value against its field with the rules the
// client applies to the whole answer before sending it; nil when it fits.
// The error's Reason says which rule failed (see messages.FieldError).
func CheckField(field FormField, value any) *FieldError {
	return guards.CheckField(field, value)
}
