package gemini

import "encoding/json"

// Wire types of the Gemini API (generateContent / streamGenerateContent).
// Field names are lowerCamelCase as the REST API wants.

type wireRequest struct {
	Contents          []wireContent     `json:"contents"`
	SystemInstruction *wireContent      `json:"systemInstruction,omitempty"`
	Tools             []wireTool        `json:"tools,omitempty"`
	ToolConfig        *wireToolConfig   `json:"toolConfig,omitempty"`
	GenerationConfig  *wireGenerationCf `json:"generationConfig,omitempty"`
}

type wireContent struct {
	Role  string     `json:"role,omitempty"`
	Parts []wirePart `json:"parts"`
}

// wirePart is one part. Text is a pointer so that an empty text part
// carrying only a thought signature survives the round trip.
type wirePart struct {
	Text             *string               `json:"text,omitempty"`
	Thought          bool                  `json:"thought,omitempty"`
	InlineData       *wireBlob             `json:"inlineData,omitempty"`
	FileData         *wireFileData         `json:"fileData,omitempty"`
	FunctionCall     *wireFunctionCall     `json:"functionCall,omitempty"`
	FunctionResponse *wireFunctionResponse `json:"functionResponse,omitempty"`
	ThoughtSignature string                `json:"thoughtSignature,omitempty"`
	// Response-only kinds (code execution), never sent.
	ExecutableCode      *wireExecutableCode      `json:"executableCode,omitempty"`
	CodeExecutionResult *wireCodeExecutionResult `json:"codeExecutionResult,omitempty"`
}

type wireExecutableCode struct {
	Language string `json:"language"`
	Code     string `json:"code"`
}

type wireCodeExecutionResult struct {
	Outcome string `json:"outcome"`
	Output  string `json:"output"`
}

// carried reports whether the part is one the decoder carries as a
// provider item (code execution, inline data, a file reference).
func (p *wirePart) carried() bool {
	return p.InlineData != nil || p.FileData != nil || p.ExecutableCode != nil || p.CodeExecutionResult != nil
}

type wireBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type wireFileData struct {
	MimeType string `json:"mimeType,omitempty"`
	FileURI  string `json:"fileUri"`
}

type wireFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type wireFunctionResponse struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`

	origID string // the call id before wireID, for ordering only
}

type wireTool struct {
	FunctionDeclarations []wireFunctionDecl `json:"functionDeclarations"`
}

type wireFunctionDecl struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type wireToolConfig struct {
	FunctionCallingConfig wireFunctionCallingConfig `json:"functionCallingConfig"`
}

type wireFunctionCallingConfig struct {
	Mode                 string   `json:"mode"`
	AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
}

type wireGenerationCf struct {
	Temperature     *float64            `json:"temperature,omitempty"`
	MaxOutputTokens int                 `json:"maxOutputTokens,omitempty"`
	ThinkingConfig  *wireThinkingConfig `json:"thinkingConfig,omitempty"`
}

type wireThinkingConfig struct {
	ThinkingBudget  int  `json:"thinkingBudget"`
	IncludeThoughts bool `json:"includeThoughts"`
}

// wireResponse is one GenerateContentResponse: the whole non-streaming
// answer, or one streamed chunk holding only new parts.
type wireResponse struct {
	Candidates     []wireCandidate     `json:"candidates"`
	PromptFeedback *wirePromptFeedback `json:"promptFeedback"`
	UsageMetadata  *wireUsage          `json:"usageMetadata"`
	ModelVersion   string              `json:"modelVersion"`
	ResponseID     string              `json:"responseId"`
	Error          *wireStatus         `json:"error"`
}

type wireCandidate struct {
	Content       *wireContent `json:"content"`
	FinishReason  string       `json:"finishReason"`
	FinishMessage string       `json:"finishMessage"`
	Index         int          `json:"index"`
	// Metadata carried as provider items; the fast scanner hands chunks
	// that have them to encoding/json.
	CitationMetadata   json.RawMessage    `json:"citationMetadata"`
	GroundingMetadata  json.RawMessage    `json:"groundingMetadata"`
	URLContextMetadata json.RawMessage    `json:"urlContextMetadata"`
	SafetyRatings      []wireSafetyRating `json:"safetyRatings"`
}

type wireSafetyRating struct {
	Category    string `json:"category"`
	Probability string `json:"probability"`
	Blocked     bool   `json:"blocked"`
}

type wirePromptFeedback struct {
	BlockReason        string             `json:"blockReason"`
	BlockReasonMessage string             `json:"blockReasonMessage"`
	SafetyRatings      []wireSafetyRating `json:"safetyRatings"`
}

type wireUsage struct {
	PromptTokenCount        int `json:"promptTokenCount"`
	CandidatesTokenCount    int `json:"candidatesTokenCount"`
	ThoughtsTokenCount      int `json:"thoughtsTokenCount"`
	CachedContentTokenCount int `json:"cachedContentTokenCount"`
	ToolUsePromptTokenCount int `json:"toolUsePromptTokenCount"`
	TotalTokenCount         int `json:"totalTokenCount"`
}

// wireStatus is a google.rpc.Status error.
type wireStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
	Status  string `json:"status"`
	Details []struct {
		Type       string `json:"@type"`
		RetryDelay string `json:"retryDelay"`
		Reason     string `json:"reason"`
	} `json:"details"`
}

type wireErrorBody struct {
	Error *wireStatus `json:"error"`
}
